"""A check kept in the run's folder is set against the run: ``kit run``'s last line, report.html."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.cli import EXIT_OK, main
from kit.examples.quickstart import CONFIG_PATH
from kit.store._check_file import forecast_against_run

FAST = ["model.work_seconds=0", "parallel.env=inline", "items.stop=40"]


def test_the_run_after_a_check_is_set_against_its_forecast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["check", str(CONFIG_PATH), *FAST, f"output_dir={out}", "--items", "4"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["check.json"]  # nothing of the run's
    capsys.readouterr()
    assert main(["run", str(CONFIG_PATH), *FAST, f"output_dir={out}"]) == EXIT_OK
    last = capsys.readouterr().out.strip().splitlines()[-1]
    against = forecast_against_run(out)
    assert against is not None and against.same and against.actual is not None
    assert last.startswith("kit check: forecast ")
    assert f"the run took {against.actual:.1f} s" in last
    page = (out / "report.html").read_text()
    assert "Forecast (kit check) against the run" in page
    assert f"{against.actual:.1f} s: {against.error:+.0%}" in page


def test_a_check_of_other_items_is_not_taken_for_this_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["check", str(CONFIG_PATH), *FAST, f"output_dir={out}", "--items", "4"]) == 0
    assert main(["run", str(CONFIG_PATH), *FAST, "items.stop=30", f"output_dir={out}"]) == 0
    assert "but for another config or other items" in capsys.readouterr().out
    against = forecast_against_run(out)
    assert against is not None and (against.same, against.actual) == (False, None)


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        '["a list"]',
        '{"forecast": {"seconds": {"low": "1", "median": 2, "high": 3}, "slots": 1}}',
        '{"forecast": {"seconds": {"low": 1, "median": 2}, "slots": 1, "slot_hours": 0.1}}',
        '{"forecast": {"seconds": {"low": 1, "median": 2, "high": 3}, "slots": "2",'
        ' "slot_hours": 0.1}}',
    ],
)
def test_a_check_file_of_anything_else_reads_as_no_forecast(tmp_path: Path, stored: str) -> None:
    (tmp_path / "check.json").write_text(stored)
    assert forecast_against_run(tmp_path) is None


def test_a_linked_check_file_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    seconds = {"low": 1, "median": 2, "high": 3}
    elsewhere.write_text(
        json.dumps({"forecast": {"seconds": seconds, "slots": 1, "slot_hours": 0.1}})
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "check.json").symlink_to(elsewhere)
    assert forecast_against_run(run) is None


def test_a_check_file_in_the_way_loses_the_keeping_not_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    (out / "check.json").mkdir(parents=True)  # planted by a co-user of the folder
    with pytest.warns(RuntimeWarning, match="could not be kept in"):
        code = main(["check", str(CONFIG_PATH), *FAST, f"output_dir={out}", "--items", "3"])
    assert code == EXIT_OK
    assert capsys.readouterr().out.startswith("kit check: PASS on 3 items")
    elsewhere = tmp_path / "precious.txt"
    elsewhere.write_text("mine")
    (out / "check.json").rmdir()
    (out / "check.json").symlink_to(elsewhere)
    # Neither followed nor renamed over: the link stays, the verdict stands.
    with pytest.warns(RuntimeWarning, match="check.json is a symbolic link"):
        assert main(["check", str(CONFIG_PATH), *FAST, f"output_dir={out}", "--items", "3"]) == 0
    assert elsewhere.read_text() == "mine" and (out / "check.json").is_symlink()
