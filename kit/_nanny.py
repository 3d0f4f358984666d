"""The nanny of Kit's local workers: Dask's own, without its malloc trim threshold.

And a wait for the workers nannies are restarting, before their cluster closes.
"""

from __future__ import annotations

import os
import time
from typing import Any

from distributed import Nanny
from distributed.core import Status

from kit._process import alive

#: Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` so freed memory
#: goes back to the system sooner. Setting it also turns off glibc's dynamic mmap
#: threshold, so every allocation above 128 KiB becomes a fresh mmap and page faults:
#: per-item arrays (Whisper's 1 MB feature windows) then cost that on every item.
#: Measured here: Whisper decoding 22% slower in processes started with it.
TRIM = "MALLOC_TRIM_THRESHOLD_"


class KitNanny(Nanny):
    """A ``distributed.Nanny`` that leaves glibc's malloc defaults to its worker.

    A ``MALLOC_TRIM_THRESHOLD_`` in the environment is kept: whoever set it chose it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if TRIM not in os.environ:
            self.pre_spawn_env.pop(TRIM, None)
            self.env.pop(TRIM, None)


#: How long closing a session waits for workers that their nannies are restarting.
RESTART_GRACE = 30.0


def restarting(cluster: Any) -> list[str]:
    """Names of ``cluster``'s workers whose process died and is not yet replaced.

    Only nannies in this process are seen (a ``LocalCluster``'s); other
    clusters give ``[]``. A worker that died is restarted by its nanny, and
    closing the nanny while it starts the new process fails inside
    distributed ("can only join a started process").

    Examples
    --------
    >>> restarting(None)
    []
    """
    names = []
    for name, nanny in list(getattr(cluster, "workers", {}).items()):
        if not isinstance(nanny, Nanny) or nanny.status != Status.running:
            continue
        worker = nanny.process
        if worker is None:
            continue
        process = worker.process  # released once the exit is handled
        if worker.status != Status.running or process is None or not alive(process.pid):
            names.append(str(name))
    return names


def wait_for_restarts(cluster: Any, timeout: float = RESTART_GRACE) -> list[str]:
    """Wait up to ``timeout`` s for :func:`restarting` to be empty; return what still restarts."""
    deadline = time.monotonic() + timeout
    while (names := restarting(cluster)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return names
