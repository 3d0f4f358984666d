"""A sweep folder others can write: resuming it runs no planted code and writes nowhere else.

Each case plants something in a finished sweep's (or search's) folder, as a
co-user who can write it could, then repeats the owner's command, directly
and through ``kit submit``: the sweep is refused with a message naming the
trial and the field, and nothing outside the folder changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import kit
from kit.cli import EXIT_USAGE, main

GRID = ["x=0.1,0.2"]
SPACE = ["x=interval(0,1)"]


def config(tmp_path: Path) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.workloads.KeyedProvider"},
        "runner": {"_target_": "tests.workloads.Quadratic", "chunk_size": 2},
        "items": {"start": 0, "stop": 4},
        "factor": 2,
        "x": 0.0,
        "sleep": 0.0,
        "log_dir": str(tmp_path),
        "parallel": {"env": "inline"},
    }


def run_sweep(kind: str, cfg: dict[str, Any], folder: Path) -> Any:
    if kind == "grid":
        return kit.sweep(cfg, GRID, output_dir=folder)
    return kit.search(cfg, SPACE, trials=2, metric="loss", output_dir=folder)


def submit_sweep(kind: str, cfg: dict[str, Any], folder: Path) -> int:
    path = folder.parent / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    if kind == "grid":
        return main(["submit", str(path), *GRID, "-o", str(folder)])
    search = ["--search", "optuna", "--trials", "2", "--metric", "loss"]
    return main(["submit", str(path), *SPACE, "-o", str(folder), *search])


def edit_record(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "sweep.json"
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def name_outside(folder: Path, victim: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        record["trials"][1]["name"] = "../victim"
        record["trials"][1]["status"] = "pending"

    edit_record(folder, change)


def link_a_trial(folder: Path, victim: Path) -> None:
    trial = folder / "trial-001"
    for path in sorted(trial.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    trial.rmdir()
    trial.symlink_to(victim, target_is_directory=True)
    edit_record(folder, lambda record: record["trials"][1].update(status="pending"))


def plant_an_override(folder: Path, victim: Path) -> None:
    # What would run code on a cluster: a preload module, here a log_dir outside.
    def change(record: dict[str, Any]) -> None:
        entry = record["trials"][1]
        entry["overrides"].append(f"log_dir={victim}")
        entry["status"] = "pending"

    edit_record(folder, change)


def plant_a_trial(folder: Path, victim: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        record["trials"].append(
            {
                "name": "trial-002",
                "overrides": ["x=7.0", f"log_dir={victim}"],
                "status": "pending",
                "params": {"x": 7.0},
                "optuna_trial": 9,
            }
        )

    edit_record(folder, change)


def move_a_param(folder: Path, victim: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        entry = record["trials"][1]
        entry["params"] = {"x": 7.0}
        entry["overrides"] = ["x=7.0"]
        entry["status"] = "pending"

    edit_record(folder, change)


CASES = [
    ("grid", name_outside, "trial 1 is named '../victim', not 'trial-001'"),
    ("search", name_outside, "trial 1 is named '../victim', not 'trial-001'"),
    ("grid", link_a_trial, "trial-001 is a symbolic link"),
    ("search", link_a_trial, "trial-001 is a symbolic link"),
    ("grid", plant_an_override, "holds another sweep"),
    ("search", plant_an_override, "trial-001's 'overrides' is not what this search would store"),
    ("search", plant_a_trial, "trial-002's 'params.x' is not what this search would store"),
    ("search", move_a_param, "trial-001's 'params.x' is not what this search would store"),
]


@pytest.mark.parametrize("how", ["direct", "submit"])
@pytest.mark.parametrize(
    ("kind", "plant", "said"), CASES, ids=[f"{k}-{p.__name__}" for k, p, _ in CASES]
)
def test_a_planted_sweep_folder_is_refused_and_nothing_outside_it_is_written(
    tmp_path: Path,
    kind: str,
    plant: Callable[[Path, Path], None],
    said: str,
    how: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = config(tmp_path)
    folder = tmp_path / "sweep"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("mine")
    run_sweep(kind, cfg, folder)
    plant(folder, victim)
    before = {p.name: p.stat().st_mtime_ns for p in (folder / "trial-000").iterdir()}
    if how == "direct":
        with pytest.raises(kit.KitError) as refused:
            run_sweep(kind, cfg, folder)
        message = str(refused.value)
    else:
        assert submit_sweep(kind, cfg, folder) == EXIT_USAGE
        message = capsys.readouterr().err
        assert not (folder / "driver.json").exists()  # refused before a driver started
    assert said in message, message
    assert sorted(p.name for p in victim.iterdir()) == ["precious"]
    assert (victim / "precious").read_text() == "mine"
    # The folder is left as found: no trial was run or rewritten.
    assert {p.name: p.stat().st_mtime_ns for p in (folder / "trial-000").iterdir()} == before


@pytest.mark.parametrize("kind", ["grid", "search"])
def test_a_finished_trial_made_by_other_code_is_not_read_back(tmp_path: Path, kind: str) -> None:
    # An attendee whose exercise code differs must not get someone else's results.
    cfg = config(tmp_path)
    folder = tmp_path / "sweep"
    run_sweep(kind, cfg, folder)
    manifest = folder / "trial-001" / "manifest.json"
    stored = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**stored, "forward_code": "0123456789abcdef"}))
    with pytest.raises(kit.errors.StoreError) as refused:
        run_sweep(kind, cfg, folder)
    message = str(refused.value)
    assert "trial-001 holds records another version of this run made: forward's code" in message
    assert f"delete {folder / 'trial-001'} to run that trial again with this code" in message
    # With the code it stored, the same sweep reads every trial back and runs none.
    manifest.write_text(json.dumps(stored))
    if kind == "grid":
        again = kit.submit_sweep(cfg, GRID, output_dir=folder)
    else:
        again = kit.submit_search(cfg, SPACE, trials=2, metric="loss", output_dir=folder)
    assert [r.stats.ok for r in again.result(timeout=60).results] == [4, 4]
    assert again.handles == {}


@pytest.mark.parametrize("kind", ["grid", "search"])
@pytest.mark.parametrize(
    ("field", "forge"),
    [
        ("summary.loss", lambda stored: stored["summary"].update(loss=-1.0)),
        ("stats.failed", lambda stored: stored["stats"].update(failed=3)),
    ],
)
def test_a_trials_result_written_by_hand_is_not_shown_or_picked_as_best(
    tmp_path: Path, kind: str, field: str, forge: Callable[[dict[str, Any]], None]
) -> None:
    # A planted result.json (a loss of -1) was shown and picked as best by --metric.
    cfg = config(tmp_path)
    folder = tmp_path / "sweep"
    run_sweep(kind, cfg, folder)
    result = folder / "trial-001" / "result.json"
    stored = json.loads(result.read_text())
    forge(stored)
    result.write_text(json.dumps(stored))
    with pytest.raises(kit.ConfigError) as refused:
        run_sweep(kind, cfg, folder)
    message = str(refused.value)
    assert message.startswith(
        f"trial-001's result.json does not match its records: its {field} is "
    )
    assert f"file: {result}" in message
    assert f"delete {folder / 'trial-001'} to run that trial again" in message


def test_a_link_planted_where_the_sweep_keeps_bokehjs_is_not_written_through(
    tmp_path: Path,
) -> None:
    cfg = config(tmp_path)
    folder = tmp_path / "sweep"
    victim = tmp_path / "victim"
    victim.mkdir()
    run_sweep("grid", cfg, folder)
    for path in sorted((folder / "bokeh").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (folder / "bokeh").rmdir()
    (folder / "bokeh").symlink_to(victim, target_is_directory=True)
    for trial in ("trial-000", "trial-001"):
        (folder / trial / "result.json").unlink()  # to run again
    edit_record(folder, lambda r: [t.update(status="pending") for t in r["trials"]])
    run_sweep("grid", cfg, folder)
    assert list(victim.iterdir()) == []
    # The reports inline BokehJS instead: whole pages, as a single run's.
    assert "../bokeh/" not in (folder / "trial-001" / "report.html").read_text()


def test_a_planted_search_size_is_refused_by_name_not_a_crash(tmp_path: Path) -> None:
    from kit._sweeps.sweep import EXAMPLE

    kit.sweep(EXAMPLE, ["items.stop=2,3"], output_dir=tmp_path)
    record = json.loads((tmp_path / "sweep.json").read_text())
    (tmp_path / "sweep.json").write_text(json.dumps({**record, "search": {"trials": "many"}}))
    with pytest.raises(
        kit.KitError, match=r"sweep\.json is not a sweep record .* 'many', not a count"
    ):
        kit.attach(tmp_path)
