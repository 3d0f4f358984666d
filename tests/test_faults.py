"""Workers that die mid-run: no record lost, none duplicated."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import kit
from kit.cluster._nanny import restarting
from kit.cluster._process import alive
from tests.workloads import Affine, Crashy, ToyProvider, expected, lines, reads_back, toy_config

pytestmark = pytest.mark.slow


def test_a_worker_killed_mid_run_loses_no_work(tmp_path: Path) -> None:
    parallel = {"env": "local", "n_workers": 2, "options": {"name": "sigkill"}}
    session = kit.get_session(parallel)
    try:
        runner = Affine(ToyProvider(toy_config(sleep=0.01)), parallel=parallel, output_dir=tmp_path)
        handle = runner.submit(range(400))
        while handle.progress.done < 40:
            time.sleep(0.005)
        victim = next(iter(session.client.run(os.getpid).values()))
        os.kill(victim, signal.SIGKILL)
        killed_at = handle.progress.done
        result = handle.result(timeout=180)
        assert killed_at < 400
        assert result.status == "completed"
        assert result.errors == []
        assert result.records == expected(range(400))
        assert result.stats.ok == 400
        reads_back(result, tmp_path)
        stored = Affine(ToyProvider(toy_config(sleep=0.01)), parallel=parallel, output_dir=tmp_path)
        assert stored.run(range(400)).stats.resumed == 400
    finally:
        session.close()


@contextlib.contextmanager
def cluster(name: str, n_workers: int) -> Iterator[dict[str, Any]]:
    """A private LocalCluster with Kit's defaults (its scheduler fails a task at a death)."""
    parallel = {"env": "local", "n_workers": n_workers, "options": {"name": name}}
    session = kit.get_session(parallel)
    try:
        yield parallel
    finally:
        session.close()


def test_an_item_that_keeps_killing_workers_fails_alone_after_retries_plus_2_deaths(
    tmp_path: Path,
) -> None:
    with cluster("fatal", n_workers=1) as parallel:
        runner = Crashy(
            ToyProvider(toy_config(tmp_path, crash_on=[3])),
            parallel=parallel,
            chunk_size=1,
            retries=1,
            output_dir=tmp_path / "out",
        )
        result = runner.run(range(8))
    reads_back(result, tmp_path / "out")
    assert result.failed_indices == [3]
    assert result.records == [0, 2, 4, None, 8, 10, 12, 14]
    message = result.errors[0].message
    assert message.startswith(
        "this item's task failed 3 times, the last 2 with the item run alone, "
        "as when it kills its worker"
    )
    assert "KilledWorker" in message
    assert lines(tmp_path, "crashes.log") == ["3"] * 3


@pytest.mark.parametrize("retries", [0, 2])
def test_a_killing_item_in_a_big_chunk_costs_retries_plus_3_deaths(
    tmp_path: Path, retries: int
) -> None:
    with cluster(f"big{retries}", n_workers=2) as parallel:
        runner = Crashy(
            ToyProvider(toy_config(tmp_path, crash_on=[13])),
            parallel=parallel,
            chunk_size=16,
            retries=retries,
            output_dir=tmp_path / "out",
        )
        result = runner.run(range(64))
    reads_back(result, tmp_path / "out")
    assert result.failed_indices == [13]
    assert result.records == [None if i == 13 else 2 * i for i in range(64)]
    # Its chunk, then the piece of it sent again, then the item alone, retries times more.
    assert lines(tmp_path, "crashes.log") == ["13"] * (retries + 3)
    assert result.errors[0].message.startswith(
        f"this item's task failed {retries + 3} times, "
        f"the last {retries + 1} with the item run alone"
    )


def test_a_chunk_lost_once_runs_again_in_pieces_spread_over_the_workers(tmp_path: Path) -> None:
    with cluster("spread", n_workers=2) as parallel:
        runner = Crashy(
            ToyProvider(toy_config(tmp_path, crash_once=[13])),
            parallel=parallel,
            chunk_size=16,
            output_dir=tmp_path / "out",
        )
        result = runner.run(range(64))
    reads_back(result, tmp_path / "out")
    assert result.records == [2 * i for i in range(64)]
    assert lines(tmp_path, "crashes.log") == ["13"]
    ledger = (tmp_path / "out" / "ledger.jsonl").read_text().splitlines()
    spans = sorted((e["start"], e["stop"]) for e in map(json.loads, ledger))
    # One piece per worker, not one item at a time: the loss costs about half the chunk.
    assert [s for s in spans if s[0] < 16] == [(0, 8), (8, 16)]


def allowed_failures(dask_scheduler: Any) -> int:
    return int(dask_scheduler.allowed_failures)


def test_the_scheduler_options_can_set_allowed_failures() -> None:
    parallel = {
        "env": "local",
        "n_workers": 1,
        "options": {"name": "patient", "scheduler_kwargs": {"allowed_failures": 3}},
    }
    session = kit.get_session(parallel)
    try:
        assert session.client.run_on_scheduler(allowed_failures) == 3
    finally:
        session.close()


def worker_processes() -> list[psutil.Process]:
    """This process's live children, but multiprocessing's helpers (started once, kept).

    The helpers are the resource tracker and the forkserver; the forkserver's own
    children (worker processes forked from it, with its command line) count.
    """

    def helper(process: psutil.Process) -> bool:
        command = " ".join(process.cmdline())
        return "resource_tracker" in command or "forkserver" in command

    live = []
    me = psutil.Process()
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            started_by_me = child.ppid() == me.pid
            if child.status() != psutil.STATUS_ZOMBIE and not (helper(child) and started_by_me):
                live.append(child)
    return live


def test_a_session_closed_while_a_killed_worker_restarts_closes_cleanly() -> None:
    # As after a run whose last item killed its worker: the nanny is starting a new one.
    before = {p.pid for p in worker_processes()}
    session = kit.get_session({"env": "local", "n_workers": 1, "options": {"name": "restart"}})
    victim = next(iter(session.client.run(os.getpid).values()))
    os.kill(victim, signal.SIGKILL)
    # A SIGKILLed process ends when the kernel next schedules it: late on a busy machine.
    while alive(victim):
        time.sleep(0.01)
    assert restarting(session.cluster) == ["0"]
    session.close()
    assert [p for p in worker_processes() if p.pid not in before] == []
