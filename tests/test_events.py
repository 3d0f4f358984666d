"""Late subscribers: a view opened after a run ended shows the run it would have seen live."""

from __future__ import annotations

import pytest

from kit import Runner
from kit.dashboard import DashboardState
from kit.events import ChunkFinished, EventStream, RunFinished, RunStarted, Scalars
from tests.workloads import EmptyEnv


class Scored(Runner):
    @staticmethod
    def forward(idx: int) -> dict:
        if idx % 17 == 3:
            raise ValueError(f"bad item {idx}")
        return {"idx": idx, "metrics": {"score": idx % 5}}


@pytest.mark.parametrize("mode", ["inline", "local"])
def test_a_state_subscribed_after_the_run_equals_one_subscribed_before(mode: str) -> None:
    parallel = None if mode == "inline" else {"env": "local", "n_workers": 2}
    early = DashboardState()
    handle = Scored(EmptyEnv({}), parallel=parallel, chunk_size=9).prepare(range(200))
    handle.events.subscribe(early)
    handle.start().result(timeout=120)
    late = DashboardState()
    handle.events.subscribe(late)
    assert late.snapshot() == early.snapshot()
    assert late.snapshot().status == "completed" and late.snapshot().done == 200


def test_a_subscriber_mid_run_misses_nothing_and_sees_nothing_twice() -> None:
    stream = EventStream()
    stream.emit(RunStarted("r", total=4, resumed=0, workers=1))
    stream.emit(ChunkFinished("r", 0, 2, 0, "w", 0.1, 0.1, 2, 0, 4))
    seen: list[object] = []
    stream.subscribe(seen.append)
    stream.emit(ChunkFinished("r", 2, 2, 0, "w", 0.1, 0.2, 4, 0, 4))
    stream.emit(RunFinished("r", "completed", 4, 0, 4, 0.3))
    assert [type(e).__name__ for e in seen] == [
        "RunStarted",
        "ChunkFinished",
        "ChunkFinished",
        "RunFinished",
    ]
    quiet: list[object] = []
    stream.subscribe(quiet.append, replay=False)
    assert quiet == []


def test_a_long_run_keeps_a_bounded_history_with_exact_totals() -> None:
    stream = EventStream(max_history=64)
    live = DashboardState()
    stream.subscribe(live)
    stream.emit(RunStarted("r", total=30_000, resumed=0, workers=3))
    done = failed = 0
    for i in range(10_000):
        worker = f"w{i % 3}"
        bad = 1 if i % 50 == 0 else 0
        done, failed = done + 3, failed + bad
        failures = ((i, "ValueError: bad"),) if bad else ()
        metrics = {"score": (float(i % 7), 3)}
        stream.emit(
            ChunkFinished(
                "r", 3 * i, 3, bad, worker, 0.01, i * 0.01, done, failed, 30_000, failures, metrics
            )
        )
        if i % 10 == 0:
            stream.emit(Scalars("r", i, {"loss": 1.0 / (i + 1)}, i * 0.01))
    stream.emit(RunFinished("r", "completed", done, failed, 30_000, 100.0))
    assert len(stream.history()) <= 64

    late = DashboardState()
    stream.subscribe(late)
    a, b = live.snapshot(), late.snapshot()
    assert (b.status, b.done, b.failed, b.total) == (a.status, a.done, a.failed, a.total)
    assert {k: (v.items, round(v.busy_seconds, 6)) for k, v in b.workers.items()} == {
        k: (v.items, round(v.busy_seconds, 6)) for k, v in a.workers.items()
    }
    assert b.metric_means == pytest.approx(a.metric_means)
    assert b.failures[-1] == a.failures[-1]
