"""The ``kit`` command line, run as a real subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest


def kit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kit", *args], capture_output=True, text=True, cwd=cwd, check=False
    )


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "base.yaml"
    path.write_text("model:\n  hidden: 64\nwidth: ${model.hidden}\nparallel:\n  env: local\n")
    return path


def test_config_show_prints_resolved_yaml_with_overrides(base: Path) -> None:
    result = kit("config", "show", str(base), "model.hidden=8", "+seed=1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "model:\n  hidden: 8\nwidth: 8\nparallel:\n  env: local\nseed: 1\n"


def test_config_diff_prints_the_override_list(base: Path, tmp_path: Path) -> None:
    edited = tmp_path / "edited.yaml"
    edited.write_text("model:\n  hidden: 32\nwidth: ${model.hidden}\nparallel:\n  env: slurm\n")
    result = kit("config", "diff", str(base), str(edited))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["model.hidden=32", "parallel.env=slurm"]


def test_config_error_exits_2_with_the_message_and_no_traceback(base: Path) -> None:
    result = kit("config", "show", str(base), "parallel.env=slurmm")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        "kit: error: parallel.env: 'slurmm' is not a valid choice; did you mean 'slurm'?"
    )
    assert "Traceback" not in result.stderr


def test_missing_values_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: ???\nb: ???\n")
    result = kit("config", "show", str(path))
    assert result.returncode == 2
    assert "2 required values are missing (???): a, b" in result.stderr


def test_usage_error_exits_2() -> None:
    result = kit("config")
    assert result.returncode == 2
    assert "usage: kit config" in result.stderr


def test_the_installed_kit_script_runs(base: Path) -> None:
    script = Path(sys.executable).with_name("kit")
    result = subprocess.run(
        [str(script), "config", "show", str(base)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "hidden: 64" in result.stdout


def test_lines_said_from_many_threads_never_interleave(capsys: pytest.CaptureFixture[str]) -> None:
    # A sweep's trials end on their runs' threads, each printing its line at once.
    from kit._base.exits import say as _say

    def say_many(n: int) -> None:
        for _ in range(300):
            _say(f"trial-{n:03d}", "x" * 60)

    threads = [threading.Thread(target=say_many, args=(n,)) for n in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: between any two writes
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8 * 300
    assert all(re.fullmatch(r"trial-\d{3} x{60}", line) for line in lines)


def test_overrides_may_follow_options(tmp_path: Path) -> None:
    quickstart = Path(__file__).parent.parent / "kit" / "examples" / "quickstart.yaml"
    out = tmp_path / "out"
    ran = kit("run", str(quickstart), "items.stop=9", "-o", str(out), "parallel.env=inline",
              "items.stop=4")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "4 ok, 0 failed" in ran.stdout  # the later override of a key wins, as in Hydra
    wrong = kit("run", str(quickstart), "-o", str(out), "--bogus", "items.stop=4")
    assert wrong.returncode == 2
    assert "kit: error: unrecognized arguments: --bogus items.stop=4" in wrong.stderr
    wrong = kit("status", str(out), "items.stop=4")  # a command that takes no overrides
    assert wrong.returncode == 2 and "unrecognized arguments: items.stop=4" in wrong.stderr
