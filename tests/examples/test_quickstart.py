"""The quickstart job that ``make demo`` runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit.examples import quickstart


def test_quickstart_runs_on_the_local_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = quickstart.main(["items.stop=40", f"output_dir={tmp_path / 'run'}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "40 ok, 0 failed, 0 resumed" in out
    assert "worker 0:" in out and "worker 1:" in out
    assert "summary: {'min_y': -1.0, 'max_y': 1.0}" in out
    assert (tmp_path / "run" / "manifest.json").exists()


def test_quickstart_inline_gives_the_same_records(tmp_path: Path) -> None:
    local = quickstart.run_quickstart(
        quickstart.quickstart_config(["items.stop=30", f"output_dir={tmp_path / 'local'}"])
    )
    inline = quickstart.run_quickstart(
        quickstart.quickstart_config(
            ["items.stop=30", f"output_dir={tmp_path / 'inline'}", "parallel.env=inline"]
        )
    )
    strip = lambda records: [(r["x"], r["y"]) for r in records]  # noqa: E731
    assert strip(local.records) == strip(inline.records)


def test_quickstart_bad_override_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert quickstart.main(["parallel.env=lcoal"]) == 2
    assert "did you mean 'local'?" in capsys.readouterr().err


def test_a_terminal_run_shows_no_distributed_log(tmp_path: Path) -> None:
    # As `make quickstart` runs it: the scheduler in this process, workers in others.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.examples.quickstart",
            "items.stop=20",
            f"output_dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "20 ok, 0 failed" in done.stdout
    noise = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if re.search(r" - distributed(\.\w+)* - [A-Z]+ - ", line)
    ]
    assert not noise, noise[:3]


def test_kit_run_runs_the_quickstart_config_as_it_is(tmp_path: Path) -> None:
    # Once refused: the example named no provider or runner, only `make quickstart` knew them.
    from kit.cli import main

    config = str(quickstart.CONFIG_PATH)
    out = tmp_path / "out"
    assert main(["run", config, "parallel.env=inline", "items.stop=5", "-o", str(out)]) == 0
    assert (out / "result.json").is_file()
