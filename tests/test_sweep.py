"""Sweeps on a real LocalCluster: one env per worker for all trials, side by side, resumed."""

from __future__ import annotations

import functools
import inspect
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import kit
from tests.workloads import lines


def pids(log_dir: Path) -> list[str]:
    return [line.split()[0] for line in lines(log_dir, "setup.log")]


def wait_until(check: Any, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.02)


def sweep_config(tmp_path: Path, local: dict[str, Any], **values: Any) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.workloads.KeyedProvider"},
        "runner": {"_target_": "tests.workloads.Shifted", "chunk_size": 4},
        "items": {"start": 0, "stop": 24},
        "factor": 2,
        "offset": 0,
        "sleep": 0.02,
        "log_dir": str(tmp_path),
        "parallel": local,
        **values,
    }


def test_trials_share_one_env_per_worker_and_run_side_by_side(tmp_path: Path, local: dict) -> None:
    folder = tmp_path / "sweep"
    result = kit.sweep(sweep_config(tmp_path, local), ["offset=0,1,2,3"], output_dir=folder)
    assert [r and r.status for r in result.results] == [kit.RunStatus.COMPLETED] * 4, result.errors
    for offset, run in enumerate(result.results):
        assert [r["y"] for r in run.records] == [2 * i + offset for i in range(24)]
    assert len(pids(tmp_path)) == 2  # the env, built once per worker for all four trials
    # Chunks of different trials ran at the same time: the trials overlapped.
    spans = [
        (min(r["began"] for r in run.records), max(r["ended"] for r in run.records))
        for run in result.results
    ]
    assert all(spans[i + 1][0] < spans[i][1] for i in range(3)), spans
    record = json.loads((folder / "sweep.json").read_text())
    assert [t["status"] for t in record["trials"]] == ["completed"] * 4
    assert [t["overrides"] for t in record["trials"]] == [[f"offset={i}"] for i in range(4)]
    assert sorted(p.name for p in folder.iterdir()) == [
        ".lock",  # held by the sweep's driver while it runs
        "bokeh",  # BokehJS, once, for the trials' reports
        "report.html",  # the sweep's, written as it ended
        "sweep.json",
        "trial-000",
        "trial-001",
        "trial-002",
        "trial-003",
    ]
    # Each trial is an ordinary run folder.
    assert kit.attach(folder / "trial-002").result(timeout=60).records == result.results[2].records
    assert result.rows()[1]["offset"] == "1" and result.swept == ["offset"]


def test_a_cancelled_sweep_resumes_with_every_record_once_and_finished_trials_untouched(
    tmp_path: Path, local: dict
) -> None:
    folder = tmp_path / "sweep"
    gate = tmp_path / "gate"
    config = sweep_config(tmp_path, local, gate=str(gate), gate_offset=1)
    handle = kit.submit_sweep(config, ["offset=0,1,2"], output_dir=folder, concurrency=1)
    # Trial 1 holds at item 8 until the gate opens: cancel it there.
    wait_until(lambda: 1 in handle.handles and handle.handles[1].progress.done >= 4, "4 items")
    handle.cancel()
    partial = handle.result(timeout=120)
    gate.write_text("open")
    assert partial.results[0].status == kit.RunStatus.COMPLETED
    assert partial.results[1].status == kit.RunStatus.CANCELLED
    assert partial.results[2] is None and str(handle.progress).endswith("cancelled")
    finished = (folder / "trial-000" / "result.json").read_bytes()
    stored = json.loads((folder / "sweep.json").read_text())
    assert [t["status"] for t in stored["trials"]] == ["completed", "cancelled", "pending"]

    again = kit.submit_sweep(config, ["offset=0,1,2"], output_dir=folder)  # the gate is open
    result = again.result(timeout=120)
    assert 0 not in again.handles  # read back, not run
    assert (folder / "trial-000" / "result.json").read_bytes() == finished
    assert again.handles[1].result().stats.resumed >= 4
    for offset, run in enumerate(result.results):
        assert run.status == kit.RunStatus.COMPLETED
        assert [r["idx"] for r in run.records] == list(range(24))
        assert [r["y"] for r in run.records] == [2 * i + offset for i in range(24)]


def test_another_sweep_or_base_config_in_the_folder_is_refused_with_the_difference(
    tmp_path: Path, local: dict
) -> None:
    folder = tmp_path / "sweep"
    config = sweep_config(tmp_path, local, items={"start": 0, "stop": 4})
    kit.sweep(config, ["offset=0,1"], output_dir=folder)
    with pytest.raises(kit.ConfigError) as info:
        kit.submit_sweep(config, ["offset=0,2"], output_dir=folder)
    message = str(info.value)
    assert "holds another sweep" in message
    assert "only there: ['offset=1']" in message and "only here: ['offset=2']" in message
    with pytest.raises(kit.ConfigError, match="holds this sweep of another base config"):
        kit.submit_sweep({**config, "factor": 3}, ["offset=0,1"], output_dir=folder)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(kit.ConfigError, match=r"holds files but no sweep\.json"):
        kit.submit_sweep(config, ["offset=0,1"], output_dir=tmp_path / "busy")
    assert lines(tmp_path, "setup.log")  # the first sweep ran


ROOT = Path(__file__).resolve().parents[1]


def _sweep_in_child(config: dict[str, Any], folder: Path) -> subprocess.Popen[bytes]:
    """A sweep's driver in a process of its own, about to be killed."""
    script = (
        "import json, sys, kit\n"
        "kit.sweep(json.loads(sys.argv[1]), ['offset=range(0,10)'], output_dir=sys.argv[2],"
        " concurrency=3)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(config), str(folder)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def calls_so_far(log_dir: Path) -> int:
    return sum(len(lines(log_dir, f"calls-{offset}.log")) for offset in range(10))


def works(log_dir: Path, before: int, child: subprocess.Popen[bytes]) -> bool:
    return calls_so_far(log_dir) > before or child.poll() is not None


def a_trial_finished(folder: Path) -> bool:
    path = folder / "sweep.json"
    if not path.exists():
        return False
    return any(t["status"] == "completed" for t in json.loads(path.read_text())["trials"])


# A kill between a chunk file's rename and its ledger line leaves a file the ledger
# does not name: warned about, never read, its item run again.
@pytest.mark.filterwarnings("ignore::kit.errors.StoreWarning")
def test_a_sweep_driver_killed_at_random_points_resumes_every_record_once(
    tmp_path: Path,
) -> None:
    rng = random.Random(26)
    folder = tmp_path / "sweep"
    config = sweep_config(
        tmp_path,
        {"env": "inline"},
        runner={"_target_": "tests.workloads.Shifted", "chunk_size": 1},
        items={"start": 0, "stop": 30},
        sleep=0.002,
        log_calls=True,
    )
    finished: dict[str, bytes] = {}
    kills = 6
    for kill in range(kills):
        child = _sweep_in_child(config, folder)
        if kill == 0:  # the first kill once a trial has finished: it must stay untouched
            wait_until(functools.partial(a_trial_finished, folder), "a finished trial")
        else:  # the others once the child works (start-up, imports and all, takes ~1 s)
            started = functools.partial(works, tmp_path, calls_so_far(tmp_path), child)
            wait_until(started, "an item or the end")
            time.sleep(rng.uniform(0.0, 0.4))
        child.send_signal(signal.SIGKILL)
        child.wait()
        stored = json.loads((folder / "sweep.json").read_text())
        for trial in stored["trials"]:
            if trial["status"] == "completed" and trial["name"] not in finished:
                finished[trial["name"]] = (folder / trial["name"] / "result.json").read_bytes()
    result = kit.sweep(config, ["offset=range(0,10)"], output_dir=folder, concurrency=3)
    assert finished, "the first kill comes after a trial finished"
    for offset, run in enumerate(result.results):
        assert run is not None and run.status == kit.RunStatus.COMPLETED, offset
        assert [r["y"] for r in run.records] == [2 * i + offset for i in range(30)]
        calls = Counter(int(x) for x in lines(tmp_path, f"calls-{offset}.log"))
        assert set(calls) == set(range(30)), offset
        # Stored once each: the ledger names every item in exactly one chunk. (An item
        # done but not yet committed when the kill came, commits being grouped over
        # 50 ms, ran again: it was not completed work.)
        ledger = (folder / f"trial-{offset:03d}" / "ledger.jsonl").read_text().splitlines()
        stored = Counter(
            i for line in ledger for i in range(json.loads(line)["start"], json.loads(line)["stop"])
        )
        assert stored == Counter(range(30)), (offset, stored.most_common(3))
    for name, before in finished.items():
        assert (folder / name / "result.json").read_bytes() == before, name


def test_a_stopped_trial_keeps_its_items_and_a_raising_on_trial_stops_nothing(
    tmp_path: Path,
) -> None:
    config = sweep_config(
        tmp_path,
        {"env": "inline"},
        provider={"_target_": "tests.workloads.ToyProvider"},
        runner={"_target_": "tests.workloads.Affine", "chunk_size": 1, "max_failures": 2},
        items={"start": 0, "stop": 10},
        fail_on=[3, 4, 5],
    )
    seen: list[str] = []

    def broken_view(trial: kit.Trial, result: Any, error: Any) -> None:
        seen.append(trial.name)
        raise RuntimeError("a view's bug")

    with pytest.warns(RuntimeWarning, match="on_trial callback raised RuntimeError"):
        result = kit.sweep(config, ["offset=0,1"], output_dir=tmp_path / "s", on_trial=broken_view)
    assert sorted(seen) == ["trial-000", "trial-001"]
    for run in result.results:
        assert run is not None and run.status == kit.RunStatus.STOPPED
        assert run.stats.failed == 2 and run.stats.ok >= 3  # items 0-2 ran before the stop
    assert sorted(result.errors) == [0, 1]
    assert [row["status"] for row in result.rows()] == ["stopped", "stopped"]
    stored = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert [t["status"] for t in stored["trials"]] == ["stopped", "stopped"]


def test_trials_attaching_new_envs_at_once_tear_each_stale_env_down_once(
    tmp_path: Path, local: dict
) -> None:
    # An earlier sweep leaves two envs on the workers (parallel.max_envs is 2); the trials
    # of the next one build two others at once, and both would tear down the same old one.
    for folder in ("earlier", "later"):
        (tmp_path / folder).mkdir()
    earlier = sweep_config(tmp_path / "earlier", local, sleep=0)
    kit.sweep(earlier, ["factor=2,3"], output_dir=tmp_path / "one")
    config = sweep_config(tmp_path / "later", local, sleep=0)
    result = kit.sweep(config, ["offset=0,1", "factor=2,3"], output_dir=tmp_path / "two")
    assert [row["status"] for row in result.rows()] == ["completed"] * 4, result.errors


def test_a_trials_end_never_waits_for_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from kit.dashboard._report import ReportWriter

    # Trial 0's report is held until trial 1 (run one at a time) has ended: drawn on the
    # trials' path, the sweep could never get there.
    folder = tmp_path / "s"
    second_done = threading.Event()
    draw = ReportWriter.draw

    def held(output_dir: Path, shared_bokeh: str | None = None, sections: Any = ()) -> None:
        if output_dir.name == "trial-000":
            assert second_done.wait(120), "trial-001 ran while trial-000's report was drawn"
        draw(output_dir, shared_bokeh, sections)

    monkeypatch.setattr(ReportWriter, "draw", staticmethod(held))

    def ended(trial: Any, result: Any, error: Any) -> None:
        if trial.number == 1:
            second_done.set()

    config = sweep_config(tmp_path, {"env": "inline"}, sleep=0)
    result = kit.sweep(config, ["offset=0,1"], output_dir=folder, concurrency=1, on_trial=ended)
    assert [r.stats.ok for r in result.results] == [24, 24]
    # Every report is there once the sweep is over, the sweep's own too.
    assert all((folder / name / "report.html").is_file() for name in ("trial-000", "trial-001"))
    assert (folder / "report.html").is_file()
    # A trial's page loads BokehJS from the sweep's folder, kept there once: kilobytes a page.
    page = (folder / "trial-001" / "report.html").read_text()
    assert '<script src="../bokeh/static/js/bokeh.min.js"></script>' in page
    assert len(page) < 100_000
    assert (folder / "bokeh" / "static" / "js" / "bokeh.min.js").is_file()


def test_a_shuffled_grid_is_resumed_in_its_folder(tmp_path: Path) -> None:
    # Hydra's shuffle() draws another order each time: once "another sweep", refused.
    folder = tmp_path / "s"
    first = kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=shuffle(2,3,4,5)"], output_dir=folder)
    again = kit.submit_sweep(
        kit._sweeps.sweep.EXAMPLE, ["items.stop=shuffle(2,3,4,5)"], output_dir=folder
    )
    result = again.result(timeout=60)
    assert again.handles == {}  # every trial read back, none run
    assert [t.overrides for t in result.trials] == [t.overrides for t in first.trials]
    assert sorted(r.stats.ok for r in result.results) == [2, 3, 4, 5]


@pytest.mark.parametrize(
    ("waits", "submits"), [("sweep", "submit_sweep"), ("search", "submit_search")]
)
def test_a_sweep_takes_what_its_submit_takes(waits: str, submits: str) -> None:
    # Made from its submit: a keyword added to one is in both.
    wait, submit = inspect.signature(getattr(kit, waits)), inspect.signature(getattr(kit, submits))
    assert wait.parameters == submit.parameters
    assert wait.return_annotation == "SweepResult"


def test_a_sweep_whose_trials_were_all_cancelled_reads_as_cancelled(tmp_path: Path) -> None:
    import json

    from kit.detached._sweep import DetachedSweep
    from kit.store._rundir import SweepDir

    folder = tmp_path / "sweep"
    kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,3,4"], output_dir=folder)
    assert DetachedSweep(folder).status == kit.RunStatus.COMPLETED
    # As `kit cancel` leaves a sweep stopped while its three trials ran: each cancelled.
    record_path = SweepDir(folder).record
    record = json.loads(record_path.read_text())
    for entry in record["trials"]:
        entry["status"] = "cancelled"
    record_path.write_text(json.dumps(record))
    assert DetachedSweep(folder).status == kit.RunStatus.CANCELLED  # it said completed
