"""A ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, as a remote cluster would be."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DASK = str(Path(sys.executable).with_name("dask"))
#: Workers import Kit and the benchmarks' providers from the checkout.
ENV = dict(os.environ, PYTHONPATH=f"{ROOT}:{HERE}")


@contextlib.contextmanager
def remote_cluster(folder: Path, workers: int, threads: int) -> Iterator[tuple[str, list[int]]]:
    """Start a scheduler and ``workers`` worker processes of ``threads`` threads.

    Yields the scheduler's address and the started processes' ids (the
    workers' nanny is their parent) once every worker has joined.
    """
    from distributed import Client

    scheduler_file = folder / "scheduler.json"
    common: dict[str, Any] = {"env": ENV, "cwd": folder}
    common.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    host = ["--host", "127.0.0.1", "--no-dashboard"]
    procs = [
        subprocess.Popen(
            [DASK, "scheduler", "--port", "0", "--scheduler-file", str(scheduler_file), *host],
            **common,
        )
    ]
    try:
        while not scheduler_file.exists():
            time.sleep(0.1)
        size = ["--nworkers", str(workers), "--nthreads", str(threads)]
        procs.append(
            subprocess.Popen(
                [DASK, "worker", "--scheduler-file", str(scheduler_file), *size, *host], **common
            )
        )
        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address) as client:
            client.wait_for_workers(workers)
        yield address, [proc.pid for proc in procs]
    finally:
        # The workers first, while their scheduler answers: told to stop then, they close
        # at once; with the scheduler gone first they wait out their reconnect timeouts.
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
