"""A real Jupyter kernel for the tests that drive one through jupyter_client."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def start_kernel(cwd: Path) -> tuple[Any, Any]:
    """Start a ``python3`` kernel in ``cwd``; return its manager and a ready client."""
    import jupyter_client

    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(cwd))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
    except BaseException:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        raise
    return manager, client
