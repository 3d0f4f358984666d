"""A cluster that grows or shrinks under a running job: new workers get work, leavers lose none."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.events import ChunkFinished, Event, RunFinished, RunStarted
from tests.workloads import Affine, Naps, ToyProvider, expected, toy_config

pytestmark = pytest.mark.slow


@pytest.fixture
def elastic() -> Iterator[tuple[dict[str, Any], kit.Session]]:
    """A private LocalCluster of one worker, closed afterwards."""
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "elastic"}}
    session = kit.get_session(parallel)
    try:
        yield parallel, session
    finally:
        session.close()


def when(handle: Any, predicate: Callable[[Event], bool]) -> threading.Event:
    """An event set once the run emits an event matching ``predicate``."""
    flag = threading.Event()
    handle.events.subscribe(lambda event: flag.set() if predicate(event) else None)
    return flag


def ideal_makespan(work: float, joins: list[float]) -> float:
    """Shortest time in which workers that join at ``joins`` (s) can do ``work`` seconds."""
    joins = sorted(max(0.0, t) for t in joins)
    low, high = 0.0, joins[-1] + work
    for _ in range(60):  # bisect: capacity-time available by T is sum(max(0, T - join))
        mid = (low + high) / 2
        low, high = (mid, high) if sum(max(0.0, mid - t) for t in joins) < work else (low, mid)
    return high


def test_workers_that_join_mid_run_get_work_at_once(
    elastic: tuple[dict[str, Any], kit.Session],
) -> None:
    parallel, session = elastic
    n, seconds = 300, 0.04
    events: list[Event] = []
    handle = Naps(ToyProvider(toy_config()), parallel=parallel).prepare(
        range(n), on_event=events.append, seconds=seconds
    )
    began = when(handle, lambda e: isinstance(e, RunStarted))
    handle.start()
    assert began.wait(120)
    session.cluster.scale(4)
    result = handle.result(timeout=300)

    assert [r["idx"] for r in result.records] == list(range(n))
    workers = {r["worker"] for r in result.records}
    assert len(workers) == 4, f"every worker that joined gets items: {workers}"
    started = next(e for e in events if isinstance(e, RunStarted)).started
    finished = next(e for e in events if isinstance(e, RunFinished))
    joined = [
        when - started
        for when, msg in session.client.get_events("all")
        if isinstance(msg, dict) and msg.get("action") == "add-worker"
    ]
    assert len(joined) == 4
    ideal = ideal_makespan(n * seconds, joined)
    assert finished.elapsed <= 1.25 * ideal, (finished.elapsed, ideal, joined)


def test_workers_removed_mid_run_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    parallel = {"env": "local", "n_workers": 3, "options": {"name": "shrinking"}}
    session = kit.get_session(parallel)
    try:
        runner = Affine(ToyProvider(toy_config(sleep=0.02)), parallel=parallel, output_dir=tmp_path)
        handle = runner.prepare(range(300))
        underway = when(handle, lambda e: isinstance(e, ChunkFinished) and e.done >= 60)
        handle.start()
        assert underway.wait(120)
        session.cluster.scale(1)  # retire two workers while their chunks run
        result = handle.result(timeout=300)
        assert result.status == "completed" and result.errors == []
        assert result.records == expected(range(300))
        assert len(session.client.nthreads()) == 1
        # The store holds every position exactly once.
        positions = [
            json.loads(line)["p"]
            for path in sorted((tmp_path / "chunks").glob("*.jsonl"))
            for line in path.read_text().splitlines()[1:]
        ]
        assert sorted(positions) == list(range(300))
    finally:
        session.close()


def test_ideal_makespan_of_staggered_workers() -> None:
    assert ideal_makespan(10.0, [0.0]) == pytest.approx(10.0)
    # One worker alone for 2 s (2 s of work), then two share the remaining 8 s.
    assert ideal_makespan(10.0, [0.0, 2.0]) == pytest.approx(6.0)


def test_a_cluster_left_without_workers_ends_the_run_and_resume_completes_it(
    tmp_path: Path,
) -> None:
    parallel = {"env": "local", "n_workers": 1, "startup_timeout": 2, "options": {"name": "gone"}}
    session = kit.get_session(parallel)
    out = tmp_path / "run"
    try:
        cfg = toy_config(sleep=0.02)
        runner = Affine(ToyProvider(cfg), parallel=parallel, output_dir=out, chunk_size=5)
        run = runner.submit(range(200))
        some = when(run, lambda e: isinstance(e, ChunkFinished) and e.done >= 20)
        assert some.wait(120)
        session.cluster.scale(0)
        with pytest.raises(kit.NoWorkersError, match=r"the cluster has had no worker for 2 s"):
            run.result(timeout=120)
    finally:
        session.close()
    inline = {"env": "inline"}
    again = Affine(ToyProvider(cfg), parallel=inline, output_dir=out, chunk_size=5).run(range(200))
    assert again.records == expected(range(200)) and again.stats.resumed >= 20
