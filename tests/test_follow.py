"""A dashboard draws the same final picture however the run ran, detached runs included."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import kit
from kit.dashboard import Dashboard
from kit.dashboard._state import Snapshot
from kit.detached._follow import follow_events
from kit.events import EventLog, RunFinished, RunStarted, event_to_dict
from tests.workloads import Scored, ToyProvider, toy_config

ITEMS = 40


def final_picture(snapshot: Snapshot) -> dict[str, Any]:
    """What a finished run's dashboard shows, leaving out timings and item order."""
    return {
        "status": snapshot.status,
        "total": snapshot.total,
        "done": snapshot.done,
        "failed": snapshot.failed,
        "summary": snapshot.summary,
        "metrics": {
            name: (xs[-1], round(ys[-1], 9)) for name, (xs, ys) in snapshot.metrics.items()
        },
    }


def shown(run: Any, *, before: bool = True) -> dict[str, Any]:
    """Follow ``run`` with a dashboard (before or after it ended); its final picture."""
    dashboard = Dashboard(interval=0.05)
    if before:
        dashboard.follow(run)
    run.result(timeout=120)
    if not before:
        dashboard.follow(run)
    deadline = time.monotonic() + 60
    while not dashboard.finished:
        assert time.monotonic() < deadline, "the dashboard never saw the run end"
        time.sleep(0.05)
    dashboard.stop()
    return final_picture(dashboard.state.snapshot())


def test_inline_local_detached_and_late_views_end_on_the_same_picture(
    tmp_path: Path, local: dict[str, Any]
) -> None:
    def runner(parallel: Any, folder: str) -> Scored:
        return Scored(ToyProvider(toy_config()), parallel=parallel, output_dir=tmp_path / folder)

    pictures = {
        "inline": shown(runner(None, "inline").submit(range(ITEMS))),
        "local": shown(runner(local, "local").submit(range(ITEMS))),
        "ended before the view": shown(runner(None, "late").submit(range(ITEMS)), before=False),
        "detached": shown(runner(None, "detached").submit(range(ITEMS), detached=True)),
        "attached after it ended": shown(kit.attach(tmp_path / "detached"), before=False),
    }
    first = pictures["inline"]
    assert first["status"] == "completed" and first["done"] == ITEMS
    assert set(first["metrics"]) == {"wer", "rtf"}
    assert all(x == ITEMS for x, _ in first["metrics"].values())
    for how, picture in pictures.items():
        assert picture == first, how


def test_a_detached_run_is_drawn_live_as_its_driver_writes(tmp_path: Path) -> None:
    run = Scored(ToyProvider(toy_config(sleep=0.05)), output_dir=tmp_path).submit(
        range(ITEMS), detached=True
    )
    dashboard = Dashboard(interval=0.05).follow(run)
    seen = set()
    deadline = time.monotonic() + 120
    while not dashboard.finished:
        assert time.monotonic() < deadline, "the dashboard never saw the run end"
        seen.add(dashboard.state.snapshot().done)
        time.sleep(0.02)
    assert len(seen - {0, ITEMS}) >= 2, f"no progress was drawn on the way: {sorted(seen)}"
    assert dashboard.state.snapshot().done == ITEMS


def test_a_line_being_written_is_read_once_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    EventLog(path)(RunStarted("r1", total=1, resumed=0, workers=1))
    writing = threading.Event()
    writing.set()
    stream = follow_events(path, live=writing.is_set, poll=0.01)
    line = json.dumps(event_to_dict(RunFinished("r1", "completed", 1, 0, 1, 0.1))) + "\n"
    with path.open("a") as fh:
        fh.write(line[:10])  # the writer is mid-line
        fh.flush()
        time.sleep(0.1)  # the reader looks ten times meanwhile
        assert [type(e).__name__ for e in stream.history()] == ["RunStarted"]
        fh.write(line[10:])
    writing.clear()  # the writer ends
    stream.join(10)
    assert [type(e).__name__ for e in stream.history()] == ["RunStarted", "RunFinished"]


def test_a_writer_gone_before_the_end_ends_the_reading(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    EventLog(path)(RunStarted("r1", total=5, resumed=0, workers=1))
    stream = follow_events(path, live=lambda: False, poll=0.01)
    stream.join(10)
    assert [type(e).__name__ for e in stream.history()] == ["RunStarted"]
