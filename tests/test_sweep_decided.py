"""A sweep that stops each trial once its comparison with the first is decided."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import kit
from kit import KitError
from kit._sweeps.decided import DecidedPlan
from kit._sweeps.request import SweepRequest
from kit._sweeps.sweep import submit_sweep
from kit.cli import main

ITEMS = 500
#: Seconds an item takes in the tests that stop trials: a chunk of 10 outlasts the inline
#: engine's commit window, so each chunk is announced as it ends (as decoding's are).
SLEEP = 0.006


def scored_config(tmp_path: Path, **values: Any) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.workloads.KeyedProvider"},
        "runner": {"_target_": "tests.workloads.Errs", "chunk_size": 10},
        "items": {"start": 0, "stop": ITEMS},
        "factor": 1,
        "log_dir": str(tmp_path),
        "gain": 0.0,
        "noise": 0,
        "sleep": 0.0,
        "parallel": {"env": "inline"},
        **values,
    }


def test_a_clearly_better_trial_stops_early_and_a_tied_one_runs_on(tmp_path: Path) -> None:
    # gain=0.1: errs 0.1 less on every item than trial-000; noise=1 alone: another draw
    # of the same system (on a finite set, a tie to within noise).
    handle = submit_sweep(
        scored_config(tmp_path, sleep=SLEEP),
        ["gain=0.0,0.1", "noise=0,1"],
        output_dir=tmp_path / "sweep",
        metric="err",
        stop="decided",
        # One at a time: trial-000's items are all there when the others run, so what each
        # trial saves does not depend on which thread ran ahead.
        concurrency=1,
    )
    assert isinstance(handle._plan, DecidedPlan)
    result = handle.result(timeout=300)
    rows = {row["trial"]: row for row in result.rows()}
    assert (rows["trial-000"]["status"], rows["trial-000"]["ok"]) == ("completed", ITEMS)
    tied = rows["trial-001"]
    # The set's own difference is a fraction of the noise: never decided early.
    assert tied["status"] == "completed" or tied["ok"] >= 0.8 * ITEMS, tied
    for better in (rows["trial-002"], rows["trial-003"]):
        assert better["status"] == "pruned", better
        assert better["note"].startswith(f"gain=0.1 noise={better['noise']}: err lower by ")
        decided_at = int(re.search(r"decided at (\d+) of 500 items", better["note"])[1])
        assert decided_at < ITEMS / 2, better  # decided within half the items
        assert better["ok"] < ITEMS, better  # and its run stopped
    assert result.errors == {}


def test_every_trial_runs_the_items_in_one_shared_random_order(tmp_path: Path) -> None:
    result = kit.sweep(
        scored_config(tmp_path, items={"start": 0, "stop": 40}),
        ["gain=0.0,0.0"],
        output_dir=tmp_path / "sweep",
        metric="err",
        stop="decided",
    )
    first, second = (r.indices for r in result.results if r is not None)
    assert list(first) == list(second) != list(range(40))
    assert sorted(first) == list(range(40))


def test_stop_decided_needs_a_metric_and_the_same_items_in_every_trial(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="give metric="):
        submit_sweep(scored_config(tmp_path), ["gain=0,0.1"], stop="decided")
    handle = submit_sweep(
        scored_config(tmp_path),
        ["items.stop=20,30"],
        output_dir=tmp_path / "other",
        metric="err",
        stop="decided",
    )
    result = handle.result(timeout=120)
    assert "runs other items than trial-000" in str(result.errors[1])


def test_kit_sweep_stop_decided_says_what_was_decided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    config = tmp_path / "scored.yaml"
    config.write_text(yaml.safe_dump(scored_config(tmp_path, sleep=SLEEP)))
    command = ["sweep", str(config), "gain=0.0,0.1", "--metric", "err", "--stop", "decided"]
    code = main([*command, "--concurrency", "1", "-o", str(tmp_path / "sweep")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "trial-001 gain=0.1: pruned (gain=0.1: err lower by " in printed
    assert "than trial-000, decided at " in printed and "% of its items saved)" in printed
    # The best is the trial decided better, stopped early: not trial-000, the one completed.
    assert "best: trial-001 gain=0.1: decided lower err than trial-000\n" in printed


def test_a_search_stops_a_trial_once_decided_tells_its_study_and_resumes_it_as_decided(
    tmp_path: Path,
) -> None:
    optuna = pytest.importorskip("optuna")
    from kit._sweeps.search import DECIDED_ATTR, submit_search

    def search() -> kit.SweepResult:
        handle = submit_search(
            scored_config(tmp_path, sleep=SLEEP),
            ["gain=choice(0.0,0.1)"],
            trials=2,
            metric="err",
            # Seeded: trial-000 draws gain 0.1 and trial-001 gain 0.0, worse by 0.1 an item.
            sampler=optuna.samplers.RandomSampler(seed=0),
            output_dir=tmp_path / "search",
            concurrency=1,
            stop="decided",
        )
        assert isinstance(handle._plan, DecidedPlan)
        return handle.result(timeout=300)

    result = search()
    rows = result.rows()
    assert (rows[0]["status"], rows[0]["ok"]) == ("completed", ITEMS)
    assert rows[1]["status"] == "pruned" and rows[1]["ok"] < ITEMS / 2, rows[1]
    assert "than trial-000, decided at " in rows[1]["note"]
    assert result.study is not None
    told = result.study.trials[1]
    # The study hears of the decided trial as a value (its metric over the items it ran).
    assert told.state == optuna.trial.TrialState.COMPLETE and DECIDED_ATTR in told.user_attrs
    assert told.value == pytest.approx(
        sum(r["metrics"]["err"] for r in result.results[1].records if r) / rows[1]["ok"]
    )
    again = search()  # the same search again: nothing runs, the decided trial stays decided
    assert [row["status"] for row in again.rows()] == ["completed", "pruned"]
    assert len(again.study.trials) == 2


def test_a_search_takes_one_rule_for_stopping_trials_early() -> None:
    request = SweepRequest(
        "/tmp/c.yaml", ("lr=interval(0.1,1)",), None, 2,
        metric="y", search="optuna", trials=3, stop="decided", prune="median",
    )  # fmt: skip
    with pytest.raises(KitError, match="--stop decided and --prune are two rules"):
        request.check()
