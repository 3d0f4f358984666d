"""A class's cluster for the tests here: a scheduler and two workers of two threads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client

from tests.servers import dask_cluster

WORKERS = 2


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[str]:
    with dask_cluster(tmp_path, WORKERS, threads=2) as address:
        yield address


@pytest.fixture
def watcher(scheduler: str) -> Iterator[Client]:
    """The teacher's view: a plain Dask client asking the scheduler what it holds."""
    with Client(scheduler) as client:
        client.wait_for_workers(WORKERS)
        yield client
