"""``kit sweep``'s exit code tells how its trials ended: one table, kit.cli.EXIT_CODES."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from kit.cli import (
    EXIT_ITEMS_FAILED,
    EXIT_NO_TRIALS,
    EXIT_OK,
    EXIT_TRIALS_FAILED,
    EXIT_USAGE,
    main,
)

JOB = """\
provider: {{_target_: tests.workloads.KeyedProvider}}
runner: {{_target_: tests.workloads.Quadratic, chunk_size: 2}}
items: {{start: 0, stop: 4}}
factor: 2
x: 0.0
sleep: 0.0
log_dir: {log}
parallel: {{env: inline}}
"""
SEARCH = ["--search", "optuna", "--trials", "2"]
#: A provider whose env reads the whole config (fail_setup, fail_on), one env per trial.
TOY = "provider._target_=tests.workloads.ToyProvider"


def kit(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    config = tmp_path / "job.yaml"
    config.write_text(JOB.format(log=tmp_path))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["sweep", str(config), *args, "-o", str(tmp_path / "sweep")])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["x=0,1"], EXIT_OK),
        (["x=0,1", "--metric", "loss"], EXIT_OK),
        (["x=interval(0,1)", *SEARCH, "--metric", "loss"], EXIT_OK),
        (
            ["x=0,1", "+fail_on=[1]", "runner._target_=tests.workloads.Affine", TOY],
            EXIT_ITEMS_FAILED,
        ),
        (["+fail_setup=false,true", TOY], EXIT_TRIALS_FAILED),
        (["x=0,1", "--metric", "nope"], EXIT_TRIALS_FAILED),
        (["x=interval(0,1)", *SEARCH, "--metric", "nope"], EXIT_TRIALS_FAILED),
        (["x=0,1", "+fail_setup=true", TOY], EXIT_NO_TRIALS),
        (["x=interval(0,inf)", *SEARCH, "--metric", "loss"], EXIT_USAGE),
        (["x=0,1", "--concurrency", "0"], EXIT_USAGE),
    ],
)
def test_a_sweeps_exit_code_says_how_its_trials_ended(
    tmp_path: Path, args: list[str], code: int
) -> None:
    try:
        got, out, err = kit(tmp_path, *args)
    except SystemExit as exc:  # argparse's usage errors
        got, out, err = int(str(exc.code)), "", ""
    assert got == code, out + err


def test_a_metric_no_trial_gives_is_named_with_what_they_have(tmp_path: Path) -> None:
    code, out, err = kit(tmp_path, "x=0,1", "--metric", "nope")
    assert code == EXIT_TRIALS_FAILED
    started, said = err.strip().splitlines()  # what it runs, then the error alone
    assert started.startswith("sweep of 2 trial(s), up to 2 at once, into ")
    assert said == (
        "kit: error: no completed trial has the metric 'nope' in its summary or its records' "
        "metrics (the summaries have: nothing)"
    )
    assert "trial-001" in out  # the table is still shown


def test_a_per_item_metric_picks_the_best_trial(tmp_path: Path) -> None:
    # `loss` is in each record's metrics, not in a summary: the best is their mean's.
    code, out, err = kit(tmp_path, "x=0.3,0.9", "--metric", "loss")
    assert code == EXIT_OK, err
    assert any(line == "best: trial-000 x=0.3: 0.0075" for line in out.splitlines()), out


def test_a_trial_with_no_item_in_common_with_the_best_says_so(tmp_path: Path) -> None:
    code, out, err = kit(tmp_path, "items.stop=0,3", "--metric", "loss")
    assert code == EXIT_OK, err
    row = next(line for line in out.splitlines() if line.startswith("trial-000  "))
    assert row.endswith("no items in common"), out


def test_a_trial_failing_with_an_empty_message_is_named_by_its_type(tmp_path: Path) -> None:
    # Once an IndexError at the end of the sweep, and no table.
    code, out, err = kit(tmp_path, "+fail_setup_silently=false,true", TOY)
    assert code == EXIT_TRIALS_FAILED, err
    row = next(line for line in out.splitlines() if line.startswith("trial-001  "))
    assert row.split()[2] == "error" and row.endswith("MemoryError"), out


def run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    config = tmp_path / "job.yaml"
    config.write_text(JOB.format(log=tmp_path))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", str(config), *args])
    return code, out.getvalue(), err.getvalue()


def test_a_run_into_a_sweeps_folder_is_refused_and_the_sweep_kept(tmp_path: Path) -> None:
    assert kit(tmp_path, "x=0,1")[0] == EXIT_OK
    code, _, err = run(tmp_path, "-o", str(tmp_path / "sweep"))
    assert code == EXIT_USAGE
    assert "holds a sweep (sweep.json); a run written there would hide it" in err
    assert not (tmp_path / "sweep" / "manifest.json").exists()


def test_resume_false_once_does_not_make_the_plain_config_another_run(tmp_path: Path) -> None:
    out = str(tmp_path / "run")
    assert run(tmp_path, "runner.resume=false", "-o", out)[0] == EXIT_OK
    code, said, err = run(tmp_path, "-o", out)
    assert code == EXIT_OK, err
    assert "(4 read back from earlier runs)" in said
