"""A cluster backend that exists only in the tests: one file, named by one entry-point line.

Its workers are threads of the driver's process (a LocalCluster without
processes); it notes each start in ``$KIT_TEST_BACKEND_LOG`` so a test can
tell it was this backend that ran.
"""

from __future__ import annotations

import os
from typing import Any

from kit.config import ParallelConfig


def start(parallel: ParallelConfig, hook: Any = None) -> tuple[Any, Any]:
    """Start ``parallel.n_workers`` thread workers; return ``(client, cluster)``."""
    from distributed import Client, LocalCluster

    with open(os.environ["KIT_TEST_BACKEND_LOG"], "a") as log:
        log.write(f"started {parallel.env} with {parallel.n_workers} workers\n")
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=parallel.n_workers,
        threads_per_worker=1,
        processes=False,
        dashboard_address=None,
    )
    return Client(cluster, set_as_default=False), cluster  # type: ignore[no-untyped-call]
