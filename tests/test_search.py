"""Optuna searches driven by Kit: asked, run side by side, pruned, resumed after a kill."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import optuna
import pytest

import kit
from tests.workloads import lines

QUICKSTART = Path(kit.__file__).parent / "examples" / "quickstart.yaml"

ROOT = Path(__file__).resolve().parents[1]


def search_config(tmp_path: Path, parallel: dict[str, Any], **values: Any) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.workloads.KeyedProvider"},
        "runner": {"_target_": "tests.workloads.Quadratic", "chunk_size": 2},
        "items": {"start": 0, "stop": 12},
        "factor": 2,
        "x": 0.0,
        "sleep": 0.01,
        "log_dir": str(tmp_path),
        "parallel": parallel,
        **values,
    }


class InOrder(optuna.samplers.BaseSampler):
    """Proposes the given values of one parameter in order: a search whose trials are known."""

    def __init__(self, values: list[float]) -> None:
        self.values = values

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
        return {}

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
        return {}

    def sample_independent(self, study: Any, trial: Any, name: str, distribution: Any) -> Any:
        return self.values[trial.number]


def loss(x: float, items: int) -> float:
    return sum(round((x - 0.3) ** 2 + 0.01 * (i % 3), 6) for i in range(items)) / items


def test_a_search_asks_optuna_runs_the_trials_on_one_env_per_worker_and_keeps_the_study(
    tmp_path: Path, local: dict
) -> None:
    folder = tmp_path / "search"
    result = kit.search(
        search_config(tmp_path, local),
        ["x=interval(0,1)", "sleep=0.01"],
        trials=6,
        metric="loss",
        output_dir=folder,
        concurrency=3,
    )
    assert [row["status"] for row in result.rows()] == ["completed"] * 6, result.errors
    study = result.study
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 6
    record = json.loads((folder / "sweep.json").read_text())
    assert record["search"]["metric"] == "loss" and (folder / "optuna.journal").is_file()
    for trial, entry, run in zip(result.trials, record["trials"], result.results, strict=True):
        x = entry["params"]["x"]
        assert trial.overrides == (f"x={x!r}", "sleep=0.01")
        assert run is not None and run.stats.ok == 12
        # Each trial's value in the study is its loss over its items.
        assert study.trials[entry["optuna_trial"]].value == pytest.approx(loss(x, 12))
        # And the study says which folder holds it.
        assert study.trials[entry["optuna_trial"]].user_attrs["kit_trial"] == entry["name"]
    assert result.swept == ["x"]
    best_trial, _ = result.best("loss")
    assert study.best_trial.params["x"] == record["trials"][best_trial.number]["params"]["x"]
    # The env is built from `factor` alone: once per worker for all six trials.
    assert len(lines(tmp_path, "setup.log")) == 2
    # Each trial is an ordinary run folder.
    assert kit.attach(folder / "trial-004").result(timeout=60).records == result.results[4].records


@pytest.mark.parametrize("pruner", ["median", "wilcoxon"])
def test_a_pruned_trial_stops_early_with_its_items_kept(tmp_path: Path, pruner: str) -> None:
    # Obviously bad trials (x far from 0.3) after good ones: the pruner stops them early.
    xs = [0.9, 0.3, 0.95, 0.3, 0.65]
    made = {
        "median": optuna.pruners.MedianPruner(n_startup_trials=2),
        "wilcoxon": optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2),
    }[pruner]
    ended: dict[str, Any] = {}
    result = kit.search(
        search_config(tmp_path, {"env": "inline"}, items={"start": 0, "stop": 40}, sleep=0.02),
        ["x=interval(0,1)"],
        trials=len(xs),
        metric="loss",
        pruner=made,
        sampler=InOrder(xs),
        output_dir=tmp_path / "search",
        concurrency=1,
        on_trial=lambda trial, run, error: ended.update({trial.name: error}),
    )
    statuses = [row["status"] for row in result.rows()]
    assert statuses == ["completed", "completed", "pruned", "completed", "pruned"]
    for number in (2, 4):
        run = result.results[number]
        assert run is not None and 0 < run.stats.ok < 20, run.stats  # well under its 40 items
        assert isinstance(ended[f"trial-{number:03d}"], kit.errors.TrialPruned)
        assert "pruned after" in str(ended[f"trial-{number:03d}"])
        assert (
            kit.attach(tmp_path / "search" / f"trial-{number:03d}")
            .result(timeout=60)
            .records[: run.stats.ok]
            == run.records[: run.stats.ok]
        )
    assert not result.errors
    states = [t.state.name for t in result.study.trials]
    assert states == ["COMPLETE", "COMPLETE", "PRUNED", "COMPLETE", "PRUNED"]
    stored = json.loads((tmp_path / "search" / "sweep.json").read_text())
    assert [t["status"] for t in stored["trials"]] == statuses
    # Run again: nothing to do; the pruned trials stay pruned, read back.
    again = kit.search(
        search_config(tmp_path, {"env": "inline"}, items={"start": 0, "stop": 40}, sleep=0.02),
        ["x=interval(0,1)"],
        trials=len(xs),
        metric="loss",
        output_dir=tmp_path / "search",
    )
    assert [row["status"] for row in again.rows()] == statuses
    assert len(again.study.trials) == len(xs)


def test_a_search_of_another_kind_space_or_metric_is_refused_in_its_folder(
    tmp_path: Path,
) -> None:
    config = search_config(tmp_path, {"env": "inline"}, items={"start": 0, "stop": 2}, sleep=0)
    folder = tmp_path / "search"
    kit.search(config, ["x=interval(0,1)"], trials=1, metric="loss", output_dir=folder)
    with pytest.raises(kit.ConfigError, match="holds a search of another space"):
        kit.submit_search(config, ["x=interval(0,2)"], trials=1, metric="loss", output_dir=folder)
    with pytest.raises(kit.ConfigError, match="with direction 'minimize', not 'maximize'"):
        kit.submit_search(
            config,
            ["x=interval(0,1)"],
            trials=1,
            metric="loss",
            direction="maximize",
            output_dir=folder,
        )
    with pytest.raises(kit.ConfigError, match="holds a search, not a grid sweep"):
        kit.submit_sweep(config, ["x=0,1"], output_dir=folder)
    with pytest.raises(kit.ConfigError, match="direction must be minimize or maximize"):
        kit.submit_search(config, ["x=interval(0,1)"], trials=1, metric="loss", direction="up")
    with pytest.raises(kit.ConfigError, match="a search needs at least one swept key"):
        kit.submit_search(config, ["x=1"], trials=1, metric="loss", output_dir=tmp_path / "n")
    # A metric no trial gives: each trial ends in error, saying what there is.
    result = kit.search(
        config, ["x=interval(0,1)"], trials=1, metric="wer", output_dir=tmp_path / "wer"
    )
    assert "gives no number 'wer'" in str(result.errors[0])
    assert result.study.trials[0].state == optuna.trial.TrialState.FAIL


def _search_in_child(config: dict[str, Any], folder: Path) -> subprocess.Popen[bytes]:
    script = (
        "import json, sys, kit\n"
        "kit.search(json.loads(sys.argv[1]), ['x=interval(0,1)'], trials=5, metric='loss',"
        " output_dir=sys.argv[2], concurrency=2)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(config), str(folder)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def trials_in(folder: Path, status: str) -> int:
    path = folder / "sweep.json"
    if not path.exists():
        return 0
    return sum(t["status"] == status for t in json.loads(path.read_text())["trials"])


# A kill between a chunk file's rename and its ledger line leaves a file the ledger
# does not name: warned about, never read, its item run again.
@pytest.mark.filterwarnings("ignore::kit.errors.StoreWarning")
def test_a_search_driver_killed_mid_trial_resumes_with_no_trial_left_running(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "search"
    config = search_config(tmp_path, {"env": "inline"}, items={"start": 0, "stop": 40}, sleep=0.01)
    finished: dict[str, bytes] = {}
    for _ in range(2):
        child = _search_in_child(config, folder)
        done = trials_in(folder, "completed")
        wait_until(functools.partial(moved, folder, "completed", done, child), "a trial's end")
        wait_until(functools.partial(moved, folder, "running", 0, child), "a running trial")
        time.sleep(0.1)  # into the trial's items: a kill mid-trial
        child.send_signal(signal.SIGKILL)
        child.wait()
        for trial in json.loads((folder / "sweep.json").read_text())["trials"]:
            if trial["status"] == "completed" and trial["name"] not in finished:
                finished[trial["name"]] = (folder / trial["name"] / "result.json").read_bytes()
    result = kit.search(
        config, ["x=interval(0,1)"], trials=5, metric="loss", output_dir=folder, concurrency=2
    )
    assert [row["status"] for row in result.rows()] == ["completed"] * 5
    states = Counter(t.state.name for t in result.study.trials)
    assert "RUNNING" not in states and states["COMPLETE"] == 5, states
    record = json.loads((folder / "sweep.json").read_text())
    for entry, run in zip(record["trials"], result.results, strict=True):
        assert run is not None and run.stats.ok == 40
        # Each trial's value is its own x's, though some were asked again after the kill.
        value = result.study.trials[entry["optuna_trial"]].value
        assert value == pytest.approx(loss(entry["params"]["x"], 40))
        ledger = (folder / entry["name"] / "ledger.jsonl").read_text().splitlines()
        stored = Counter(
            i for line in ledger for i in range(json.loads(line)["start"], json.loads(line)["stop"])
        )
        assert stored == Counter(range(40)), (entry["name"], stored.most_common(3))
    assert finished
    for name, before in finished.items():
        assert (folder / name / "result.json").read_bytes() == before, name


def moved(folder: Path, status: str, before: int, child: subprocess.Popen[bytes]) -> bool:
    return trials_in(folder, status) > before or child.poll() is not None


def wait_until(check: Any, what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.02)


def test_a_trial_asked_of_optuna_but_not_yet_in_sweep_json_is_not_left_running(
    tmp_path: Path,
) -> None:
    # A driver killed between asking Optuna for a trial and writing sweep.json.
    from kit.store._study import open_study

    config = search_config(tmp_path, {"env": "inline"}, items={"start": 0, "stop": 2}, sleep=0)
    folder = tmp_path / "search"
    kit.search(config, ["x=interval(0,1)"], trials=2, metric="loss", output_dir=folder)
    open_study(folder, "minimize").ask()  # RUNNING in the study, unknown to sweep.json
    result = kit.search(config, ["x=interval(0,1)"], trials=3, metric="loss", output_dir=folder)
    states = Counter(t.state.name for t in result.study.trials)
    assert states == {"COMPLETE": 3, "FAIL": 1}, states
    assert [row["status"] for row in result.rows()] == ["completed"] * 3


def test_without_optuna_a_search_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if it were not installed
    with pytest.raises(
        ImportError, match=r"a search needs optuna: pip install 'kit-lab\[search\]'"
    ):
        kit.submit_search(
            search_config(tmp_path, {"env": "inline"}),
            ["x=interval(0,1)"],
            trials=1,
            metric="loss",
            output_dir=tmp_path / "s",
        )
    assert not (tmp_path / "s").exists()  # nothing written


def test_a_trial_that_gives_no_number_for_the_metric_ends_in_error_saying_what_it_has(
    tmp_path: Path,
) -> None:
    result = kit.search(
        search_config(tmp_path, {"env": "inline"}),
        ["x=interval(0,1)"],
        trials=1,
        metric="wer",
        output_dir=tmp_path / "search",
    )
    assert [row["status"] for row in result.rows()] == ["error"]
    message = str(result.errors[0])
    assert message.startswith("trial-000 gives no number 'wer': the summary has ")
    assert "no record has metrics['wer']" in message
    assert result.study.trials[0].state == optuna.trial.TrialState.FAIL


def test_a_grid_sampler_runs_its_grid_once_and_the_search_ends_there(tmp_path: Path) -> None:
    # GridSampler stops the study once its grid is run through, which Optuna allows only
    # inside optimize: the last trial ended in "error" though it completed.
    result = kit.search(
        search_config(tmp_path, {"env": "inline"}),
        ["x=choice(0.1,0.3,0.5)"],
        trials=5,
        metric="loss",
        sampler=optuna.samplers.GridSampler({"x": [0.1, 0.3, 0.5]}, seed=0),
        output_dir=tmp_path / "search",
        concurrency=1,  # trials asked side by side would each take a grid point not yet told
    )
    assert [row["status"] for row in result.rows()] == ["completed"] * 3
    assert sorted(float(row["x"]) for row in result.rows()) == [0.1, 0.3, 0.5]
    assert [t.state for t in result.study.trials] == [optuna.trial.TrialState.COMPLETE] * 3
    assert not result.errors


def test_each_trial_is_scored_by_its_own_runners_summarize(tmp_path: Path) -> None:
    # A summarize that reads its runner's config: the probe runner's would score every
    # trial alike (what Optuna was once told: 0, 0, 0, 0).
    config = search_config(
        tmp_path,
        {"env": "inline"},
        runner={"_target_": "tests.workloads.ConfigScored", "chunk_size": 2},
        items={"start": 0, "stop": 2},
        sleep=0,
    )
    result = kit.search(
        config, ["x=1,0,4,2"], trials=4, metric="score", output_dir=tmp_path / "s", seed=1
    )
    for trial in result.study.trials:
        x = trial.params["x"]
        assert trial.value == pytest.approx(x), (trial.number, x, trial.value)


@pytest.mark.parametrize(
    "text",
    [
        "not json\n",
        '{"op_code": 0, "worker_id": "w", "study_name": "kit", "directions": [9]}\n',
    ],
)
def test_a_tampered_journal_is_named_with_its_path(tmp_path: Path, text: str) -> None:
    from kit.errors import KitError
    from kit.store._study import open_study

    (tmp_path / "optuna.journal").write_text(text)
    with pytest.raises(KitError) as info:
        open_study(tmp_path, "minimize")
    assert str(info.value).startswith(
        f"{tmp_path / 'optuna.journal'}: the search's study (Optuna's journal) cannot be read ("
    )


def test_a_search_in_a_notebook_prints_no_optuna_log_line(tmp_path: Path) -> None:
    # A notebook shows a library's log line as an error (a red block above the view).
    script = (
        "import kit\n"
        f"handle = kit.submit_search({str(QUICKSTART)!r}, ['items.stop=int(interval(2,6))',\n"
        "    'parallel.env=inline'], trials=1, metric='max_y',\n"
        f"    output_dir={str(tmp_path / 'search')!r})\n"
        "print(handle.result(timeout=60))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "A new study created" not in done.stderr, done.stderr
