"""``kit check CONFIG``: the card on stdout, the verdict in ``--json``, parity in the exit code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kit.cli import EXIT_CHECK, EXIT_OK, EXIT_USAGE, main
from kit.examples.quickstart import CONFIG_PATH

# The check keeps its verdict in the run's folder, by default under runs/ here.
pytestmark = pytest.mark.usefixtures("in_scratch_folder")


def test_a_clean_config_passes_with_its_forecast_in_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdict = tmp_path / "check.json"
    code = main(
        [
            "check",
            str(CONFIG_PATH),
            "model.work_seconds=0",
            "parallel.env=inline",
            "--items",
            "5",
            "--json",
            str(verdict),
        ]
    )
    out, err = capsys.readouterr()
    assert code == EXIT_OK, out + err
    assert out.startswith("kit check: PASS on 5 items")
    assert "kit check: reference: 5 items in this process" in err  # progress goes to stderr
    data = json.loads(verdict.read_text())
    assert data["parity"] == {
        "ok": True,
        "cause": None,
        "why": "the same records every way",
        "differences": [],
        "compared": {"reference vs again": 5},
    }
    assert data["forecast"]["items"] == 300 and data["forecast"]["slots"] == 1
    assert data["forecast"]["seconds"]["low"] <= data["forecast"]["seconds"]["high"]
    assert data["data"] == {
        "items": 300,
        "ok": True,
        "problems": [],
        "problem_count": 0,
        "sample_share": None,
        "feature": None,
    }


def planted_config(folder: Path, runner: str, *extra: str, items: int = 10) -> Path:
    """Write a config of one of ``tests.check.planted``'s runners, inline, with ``extra`` lines."""
    config = folder / f"{runner.lower()}.yaml"
    lines = [
        "provider: {_target_: tests.check.planted.Plain}",
        f"runner: {{_target_: tests.check.planted.{runner}}}",
        f"items: {{start: 0, stop: {items}}}",
        "parallel: {env: inline}",
        *extra,
    ]
    config.write_text("\n".join(lines) + "\n")
    return config


def test_a_difference_exits_with_the_check_code_and_names_the_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = planted_config(tmp_path, "Unseeded", f"output_dir: {tmp_path / 'run'}")
    code = main(["check", str(config), "--items", "3", "--json", str(tmp_path / "v.json")])
    out, _ = capsys.readouterr()
    assert code == EXIT_CHECK
    assert "likely cause: nondeterminism" in out
    assert re.search(r"- item \d, sampled: 0\.\d+ \(reference\) vs 0\.\d+ \(again\)", out)
    assert json.loads((tmp_path / "v.json").read_text())["parity"]["cause"] == "nondeterminism"
    # The verdict is kept for the run's report, and nothing of a run is written.
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["check.json"]


def test_the_config_check_section_sets_what_may_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = planted_config(tmp_path, "Unseeded", "check: {items: 2, ignore: [sampled]}")
    assert main(["check", str(config)]) == EXIT_OK
    assert "PASS on 2 items" in capsys.readouterr().out


def test_a_bad_item_count_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", str(CONFIG_PATH), "--items", "0"])
    assert exited.value.code == EXIT_USAGE
    assert "--items" in capsys.readouterr().err


def test_the_config_names_the_cost_the_forecast_scales_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = planted_config(tmp_path, "Steady", items=30)
    verdict_file = str(tmp_path / "v.json")
    assert main(["check", str(config), "+runner.cost_by=length", "--json", verdict_file]) == 0
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["forecast"]["feature"] == "length"
    assert verdict["data"]["feature"] == "length" and 0 < verdict["data"]["sample_share"] < 1
    assert main(["check", str(config), "+runner.cost_by=lenght"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "Steady has no static method 'lenght'; did you mean 'length'?" in err
    assert "full_key: runner.cost_by" in err


def test_a_bad_check_section_or_target_says_which_key_and_how_to_fix_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = planted_config(tmp_path, "Steady", "check: {items: 0, ignre: [t]}")
    assert main(["check", str(config)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "check" in err and "ignre" in err and "did you mean 'ignore'" in err
    config = planted_config(tmp_path, "Steady", "check: {items: 0}")
    assert main(["check", str(config)]) == EXIT_USAGE
    assert "check.items" in capsys.readouterr().err
    target = tmp_path / "target.yaml"
    target.write_text("lr: 0.1\n")
    config = planted_config(tmp_path, "Steady")
    assert main(["check", str(config), "--target", str(target)]) == EXIT_USAGE
    assert f"--target {target} has no parallel section" in capsys.readouterr().err
