"""Dashboard state: bounded memory, rates, metrics; the bokeh view draws a snapshot."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from kit import dashboard, events
from kit.dashboard import DashboardState, Series
from kit.events import (
    ChunkFinished,
    RunFinished,
    RunStarted,
    Scalars,
    event_from_dict,
    event_to_dict,
)
from kit.result import RunStatus


def chunk(
    done: int, t: float, worker: str = "0", items: int = 10, failed: int = 0
) -> ChunkFinished:
    return ChunkFinished(
        "r",
        done - items,
        items,
        failed,
        worker,
        0.01 * items,
        t,
        done,
        failed,
        10**9,
        metrics={"loss": (items * 0.5, items)},
    )


def test_series_keep_at_most_max_points_and_the_ends() -> None:
    series = Series(max_points=100)
    for i in range(1_000_000):
        series.append(i, i)
    x, _ = series.points()
    assert len(series.x) <= 100
    assert x[0] == 0 and x[-1] == 999_999


def test_state_memory_stays_bounded_over_a_long_run() -> None:
    state = DashboardState(max_points=200)
    state(RunStarted("r", total=10**9, resumed=0, workers=4))
    for i in range(2_000):
        state(chunk(10 * (i + 1), i * 0.01, worker=str(i % 4)))
    # Only what the dashboard's own code keeps: other threads of this process (left by
    # earlier tests, or busy under load) allocate too, and must not count.
    # The events it could keep are made here and in kit.events: those count too.
    own = [
        tracemalloc.Filter(True, str(Path(dashboard.__file__).parent / "*")),
        tracemalloc.Filter(True, events.__file__),
        tracemalloc.Filter(True, __file__),
    ]
    tracemalloc.start()
    before = tracemalloc.take_snapshot().filter_traces(own)
    for i in range(2_000, 50_000):
        state(chunk(10 * (i + 1), i * 0.01, worker=str(i % 4)))
    after = tracemalloc.take_snapshot().filter_traces(own)
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert grown < 200_000, f"state grew by {grown} bytes over 48,000 events"
    snap = state.snapshot()
    assert len(snap.throughput[0]) <= 202 and len(snap.metrics["loss"][0]) <= 202
    assert snap.done == 500_000
    assert sum(w.items for w in snap.workers.values()) == 500_000


def test_rate_eta_and_final_status() -> None:
    state = DashboardState()
    state(RunStarted("r", total=100, resumed=0, workers=1))
    state(chunk(10, 1.0))
    state(chunk(20, 2.0))
    snap = state.snapshot()
    assert snap.items_per_second == pytest.approx(10.0)
    assert snap.eta_seconds == pytest.approx(8.0)
    state(RunFinished("r", "completed", 100, 0, 100, 10.0, {"wer": 0.1}))
    snap = state.snapshot()
    assert snap.status == "completed" and snap.eta_seconds is None and snap.summary == {"wer": 0.1}


def test_the_bokeh_view_draws_a_snapshot() -> None:
    pytest.importorskip("bokeh")
    from kit.dashboard._figures import DashboardView

    state = DashboardState()
    state(RunStarted("r", total=40, resumed=0, workers=2, dashboard="http://127.0.0.1:8787/status"))
    state(chunk(20, 1.0, worker="a", items=20, failed=2))
    state(ChunkFinished("r", 20, 20, 0, "b", 0.5, 2.0, 40, 2, 40, ((3, "ValueError: x"),)))
    view = DashboardView("demo")
    view.update(state.snapshot())
    assert view.workers_source.data["worker"] == ["a", "b"]
    assert view.workers_source.data["items"] == [20, 20]
    assert view.progress_source.data["right"] == [38, 40]
    assert "<td>3</td><td>ValueError: x</td>" in view.failures.text
    assert "Dask dashboard" in view.header.text and "40/40" in view.header.text
    state(RunFinished("r", "completed", 40, 2, 40, 2.0))
    view.update(state.snapshot())
    assert "Dask dashboard" not in view.header.text  # the run is over: its cluster may be gone
    assert list(view._metric_sources) == ["loss"]
    assert view.metrics_title.text == "metrics"


def test_a_run_without_metrics_says_how_to_plot_one() -> None:
    pytest.importorskip("bokeh")
    from kit.dashboard._figures import DashboardView

    state = DashboardState()
    state(RunStarted("r", total=10, resumed=0, workers=1))
    view = DashboardView("demo")
    view.update(state.snapshot())
    assert view.metrics_title.text == "metrics"  # nothing done yet: nothing to explain
    state(ChunkFinished("r", 0, 10, 0, "a", 0.5, 1.0, 10, 0, 10, ()))
    view.update(state.snapshot())
    assert "records with a 'metrics' dict are plotted" in view.metrics_title.text


def test_the_dashboard_is_a_bokeh_document_and_a_server_app() -> None:
    pytest.importorskip("bokeh")
    from bokeh.document import Document

    from kit.dashboard import Dashboard

    dashboard = Dashboard(interval=0.2)
    dashboard(RunStarted("r", total=10, resumed=0, workers=1))
    dashboard(chunk(10, 1.0, items=10))
    assert dashboard.refresh().view.workers_source.data["busy_label"] == ["10% busy"]
    assert dashboard.document().roots == [dashboard.layout]
    doc = Document()
    dashboard.server_app()(doc)  # what a bokeh server calls for each browser session
    assert len(doc.roots) == 1 and doc.roots[0] is not dashboard.layout
    assert len(doc.session_callbacks) == 1  # the periodic redraw


def test_logged_scalars_become_curves_over_steps_and_round_trip_the_log() -> None:
    from kit.rl import TrainingLog

    log = TrainingLog(total=3, name="train")
    state = DashboardState()
    log.events.subscribe(state)
    for step, value in enumerate([10.0, 30.0, 20.0], start=1):
        log.log(step, eval_return=value)
    log.finish({"best": 30.0})
    snap = state.snapshot()
    assert snap.metrics["eval_return"] == ([1.0, 2.0, 3.0], [10.0, 30.0, 20.0])
    assert snap.metric_means["eval_return"] == 20.0  # the latest value
    assert (snap.done, snap.total, snap.status) == (3, 3, "completed")
    event = Scalars("r", 4, {"loss": 0.5}, 1.0)
    assert event_from_dict(event_to_dict(event)) == event


def test_two_values_logged_at_one_step_count_that_step_once() -> None:
    from kit.rl import TrainingLog

    log = TrainingLog(total=5)
    state = DashboardState()
    log.events.subscribe(state)
    log.log(0, eval_return=9.0)  # before any iteration: a value, no progress
    log.log(1, eval_return=10.0)
    log.log(1, train_return=12.0)
    snap = state.snapshot()
    assert snap.done == 1 and sum(w.items for w in snap.workers.values()) == 1
    assert snap.metrics["eval_return"] == ([0.0, 1.0], [9.0, 10.0])


def test_throughput_does_not_spike_when_chunks_land_together() -> None:
    # A slow run (0.4 items/s, one item per chunk) whose chunks sometimes land 5 ms apart:
    # a per-arrival rate read 200 items/s there.
    state = DashboardState()
    state(RunStarted("r", total=100, resumed=0, workers=2))
    t = 0.0
    for step in range(30):
        t += 0.005 if step % 3 == 2 else 2.5
        state(chunk(step + 1, t, items=1))
    _, rates = state.snapshot().throughput
    assert max(rates[3:]) < 1.0 and min(rates[3:]) > 0.2


def test_a_starting_run_says_so_until_it_starts() -> None:
    pytest.importorskip("bokeh")
    from kit.dashboard._figures import header_html

    state = DashboardState()
    state.starting()
    header = header_html(state.snapshot(), "demo")
    assert "starting cluster" in header and "the plots fill in" in header
    state(RunStarted("r", total=10, resumed=0, workers=1))
    assert "starting cluster" not in header_html(state.snapshot(), "demo")


def test_the_header_of_a_cancelled_run_says_what_did_not_run_and_zero_failed_is_not_red() -> None:
    pytest.importorskip("bokeh")
    from kit.dashboard._figures import FAILED_COLOR, header_html

    state = DashboardState()
    state(RunStarted("r", total=70, resumed=0, workers=1))
    state(chunk(1, 0.5, items=1))
    state(RunFinished("r", "cancelled", 1, 0, 70, 0.6, {"score": 1 / 3}))
    header = header_html(state.snapshot(), "demo")
    assert "cancelled" in header and "69 not run" in header and "resumed" not in header
    assert FAILED_COLOR not in header.split("cancelled")[1]  # 0 failed is not an alarm
    assert "0.3333" in header and "0.33333333" not in header


def test_a_finished_training_that_stopped_early_reads_as_complete() -> None:
    state = DashboardState()
    state(RunStarted("r", total=200, resumed=0, workers=1))
    state(chunk(20, 3.0, items=20))
    state(RunFinished("r", "completed", 20, 0, 20, 3.0, {"solved": True}))
    snap = state.snapshot()
    assert (snap.done, snap.total) == (20, 20)


def test_a_resumed_session_goes_on_from_the_history_before_it() -> None:
    """A run folder's events.jsonl holds each session of the run; the picture is the whole run."""
    state = DashboardState()
    state(RunStarted("first", total=10, resumed=0, workers=1))
    state(ChunkFinished("first", 0, 4, 0, "0", 1.0, 2.0, 4, 0, 10, metrics={"wer": (0.4, 4)}))
    # The first session was killed here; the resume finds 4 items done.
    state(RunStarted("second", total=10, resumed=4, workers=2))
    state(ChunkFinished("second", 4, 6, 0, "1", 1.5, 3.0, 10, 0, 10, metrics={"wer": (0.0, 6)}))
    state(RunFinished("second", "completed", 10, 0, 10, 3.0))
    snap = state.snapshot()
    assert (snap.status, snap.done, snap.elapsed) == ("completed", 10, 5.0)
    assert snap.metric_means == {"wer": pytest.approx(0.04)}  # over all 10 items
    assert snap.workers["0"].items + snap.workers["1"].items == 10
    xs, ys = snap.progress
    assert xs == sorted(xs) and ys[-1] == 10  # time goes on from the first session


def test_a_new_run_after_another_starts_from_nothing() -> None:
    state = DashboardState()
    state(RunStarted("first", total=10, resumed=0, workers=1))
    state(ChunkFinished("first", 0, 4, 0, "0", 1.0, 2.0, 4, 0, 10, metrics={"wer": (0.4, 4)}))
    state(RunStarted("fresh", total=5, resumed=0, workers=1))
    snap = state.snapshot()
    assert (snap.done, snap.total, snap.metric_means, snap.workers) == (0, 5, {}, {})


def test_the_status_goes_waiting_starting_running_and_ends_as_the_runs_own() -> None:
    state = DashboardState()
    seen = [state.snapshot().status]
    state.starting()
    seen.append(state.snapshot().status)
    state(RunStarted("r", total=2, resumed=0, workers=1))
    seen.append(state.snapshot().status)
    state(RunFinished("r", RunStatus.CANCELLED, 1, 0, 2, 1.0))
    seen.append(state.snapshot().status)
    # One vocabulary: the run's own RunStatus, and no status at all before the run is seen.
    assert seen == [None, RunStatus.STARTING, RunStatus.RUNNING, RunStatus.CANCELLED]
