"""Runs and sweeps in a real MLflow store (SQLite), read back by MlflowClient and a server."""

from __future__ import annotations

import json
import urllib.request
import warnings
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

import kit
from kit._from_config import build_runner
from kit.tracking import TrackingWarning
from tests.servers import mlflow_server
from tests.test_sweep import sweep_config, wait_until


def graded_config(tmp_path: Path, parallel: dict[str, Any], **values: Any) -> dict[str, Any]:
    """A sweep test's 24 items in chunks of 4, with a running ``err`` and a ``mean_y`` summary."""
    return {
        **sweep_config(tmp_path, parallel, sleep=0),
        "runner": {"_target_": "tests.workloads.Graded", "chunk_size": 4},
        "output_dir": str(tmp_path / "runs" / "graded"),
        "tracking": {"mlflow": f"sqlite:///{tmp_path}/runs/mlflow.db"},
        **values,
    }


def client_of(tmp_path: Path) -> MlflowClient:
    return MlflowClient(f"sqlite:///{tmp_path}/runs/mlflow.db")


def runs_of(client: MlflowClient) -> list[Any]:
    experiment = client.get_experiment_by_name("kit")
    assert experiment is not None, "the runs go in the experiment 'kit'"
    return list(client.search_runs([experiment.experiment_id]))


def test_a_run_becomes_an_mlflow_run_with_params_stepped_metrics_artifacts_and_status(
    tmp_path: Path,
) -> None:
    runner, items = build_runner(kit.load_config(graded_config(tmp_path, {"env": "inline"})))
    result = runner.run(items)
    assert str(result.status) == "completed"

    client = client_of(tmp_path)
    [run] = runs_of(client)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "graded"
    assert run.data.params["factor"] == "2"
    assert run.data.params["runner.chunk_size"] == "4"
    assert run.data.tags["kit.output_dir"] == str(tmp_path / "runs" / "graded")
    assert run.data.metrics["mean_y"] == pytest.approx(23.0)  # the summary, by its name
    assert "engine" not in run.data.metrics  # text is not a metric
    done = [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "items/done")]
    assert done[-1] == (24, 24.0)
    assert [step for step, _ in done] == sorted(step for step, _ in done)
    running = client.get_metric_history(run.info.run_id, "running/err")
    assert running[-1].value == pytest.approx(sum((i % 4) / 4 for i in range(24)) / 24)
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.html", "config.yaml"} <= artifacts
    # Artifacts live beside the database, not in ./mlruns of wherever the test ran.
    assert (tmp_path / "runs" / "mlartifacts").is_dir()
    assert not Path("mlruns").exists()


def test_metric_points_are_stamped_when_the_run_got_there_not_when_they_were_sent(
    tmp_path: Path,
) -> None:
    # Stamped when written, a run's points sent later (by export-tracking, or by an
    # exporter that took 45 s to import MLflow) all lay after the run's end.
    from kit.cli import main

    cfg = graded_config(tmp_path, {"env": "inline"}, tracking=None)
    runner, items = build_runner(kit.load_config(cfg))
    folder = runner.run(items).output_dir
    store = f"sqlite:///{tmp_path}/runs/mlflow.db"
    assert main(["export-tracking", str(folder), "--mlflow", store]) == 0
    client = client_of(tmp_path)
    [run] = runs_of(client)
    start, end = run.info.start_time, run.info.end_time
    for name in ("items/done", "running/err", "mean_y"):
        stamps = [m.timestamp for m in client.get_metric_history(run.info.run_id, name)]
        assert stamps and all(start <= t <= end for t in stamps), (name, start, stamps, end)


def test_a_sweep_sent_later_has_its_parent_start_with_its_first_trial(tmp_path: Path) -> None:
    # Sent again later, the parent run began when it was sent, after its trials ended.
    from kit.cli import main

    cfg = graded_config(tmp_path, {"env": "inline"}, tracking=None)
    folder = tmp_path / "runs" / "later"
    kit.sweep(cfg, ["offset=0,1"], output_dir=folder)
    store = f"sqlite:///{tmp_path}/runs/mlflow.db"
    assert main(["export-tracking", str(folder), "--mlflow", store]) == 0
    runs = runs_of(client_of(tmp_path))
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(trials) == 2
    assert parent.info.start_time == min(t.info.start_time for t in trials)


def test_a_resumed_run_goes_on_in_its_mlflow_run(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # Items take 20 ms: each chunk is stored as it ends (quicker ones are stored together).
    values = {"gate": str(gate), "gate_offset": 0, "sleep": 0.02}
    cfg = kit.load_config(graded_config(tmp_path, {"env": "inline"}, **values))
    runner, items = build_runner(cfg)
    handle = runner.submit(items)
    wait_until(lambda: handle.progress.done >= 8, "the first two chunks are done")
    handle.cancel()
    gate.touch()
    assert str(handle.result().status) == "cancelled"
    client = client_of(tmp_path)
    [first] = runs_of(client)
    assert first.info.status == "KILLED"

    again, items = build_runner(cfg)
    result = again.run(items)
    assert result.stats.resumed >= 8 and str(result.status) == "completed"
    [run] = runs_of(client)  # the same MLflow run, not a second one
    assert run.info.run_id == first.info.run_id
    assert run.info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "items/done")]
    assert steps[0] < 24 and steps[-1] == 24  # both runs' progress, on one axis


def test_tracking_turned_on_later_resumes_the_stored_run_and_exports_it(tmp_path: Path) -> None:
    cfg = graded_config(tmp_path, {"env": "inline"})
    untracked = {key: value for key, value in cfg.items() if key != "tracking"}
    runner, items = build_runner(kit.load_config(untracked))
    assert runner.run(items).stats.ok == 24
    # Where a run is watched from is not part of the config a resume compares.
    again, items = build_runner(kit.load_config(cfg))
    assert again.run(items).stats.resumed == 24
    [run] = runs_of(client_of(tmp_path))
    assert run.info.status == "FINISHED" and run.data.metrics["mean_y"] == pytest.approx(23.0)


def test_a_tracker_that_fails_warns_once_and_the_run_loses_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the trackers want a folder")
    cfg = graded_config(
        tmp_path,
        {"env": "inline"},
        tracking={"mlflow": f"sqlite:///{blocker}/mlflow.db", "tensorboard": str(blocker / "tb")},
    )
    runner, items = build_runner(kit.load_config(cfg))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = runner.run(items)
    assert str(result.status) == "completed" and result.stats.ok == 24
    assert [r["y"] for r in kit.attach(tmp_path / "runs" / "graded").result().records] == [
        2 * i for i in range(24)
    ]
    said = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert len(said) == 2, said
    assert any(m.startswith("kit: MLflow export stopped") for m in said), said
    assert any(m.startswith("kit: TensorBoard export stopped") for m in said), said
    assert all("The run goes on and its output directory is complete" in m for m in said), said


def test_a_sweep_is_a_parent_run_with_a_nested_run_per_trial_also_through_a_server(
    tmp_path: Path, local: dict[str, Any]
) -> None:
    cfg = graded_config(tmp_path, local, output_dir=str(tmp_path / "runs" / "offsets"))
    result = kit.sweep(cfg, ["offset=0,1", "factor=2,3", "runner.chunk_size=3"], metric="mean_y")
    assert [str(r.status) for r in result.results if r is not None] == ["completed"] * 4

    client = client_of(tmp_path)
    runs = runs_of(client)
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.run_name == "offsets" and parent.info.status == "FINISHED"
    assert parent.data.tags["kit.sweep"] == "offset=0,1 factor=2,3 runner.chunk_size=3"
    # The parent's params are what every trial shares: a plain override, not the swept keys.
    assert parent.data.params["runner.chunk_size"] == "3"
    assert "offset" not in parent.data.params and "factor" not in parent.data.params
    assert parent.data.metrics["best/mean_y"] == pytest.approx(23.0)  # offset 0, factor 2
    assert parent.data.metrics["trials/completed"] == 4
    assert sorted(r.info.run_name for r in trials) == [f"offsets/trial-00{i}" for i in range(4)]
    for trial in trials:
        assert trial.info.status == "FINISHED"
        tag = trial.data.tags["kit.overrides"]  # e.g. "offset=1 factor=3", as its params say
        params = trial.data.params
        assert tag == f"offset={params['offset']} factor={params['factor']} runner.chunk_size=3"
        assert "report.html" in {a.path for a in client.list_artifacts(trial.info.run_id)}
    # The sweep and each trial keep their MLflow run's id: a resumed sweep goes on in them.
    folder = tmp_path / "runs" / "offsets"
    assert json.loads((folder / "tracking.json").read_text())["mlflow"]["run_id"] == (
        parent.info.run_id
    )

    store = f"sqlite:///{tmp_path}/runs/mlflow.db"
    with mlflow_server(store, tmp_path) as url:
        query = {
            "experiment_ids": [parent.info.experiment_id],
            "filter": f"tags.mlflow.parentRunId = '{parent.info.run_id}'",
        }
        request = urllib.request.Request(
            f"{url}/api/2.0/mlflow/runs/search",
            data=json.dumps(query).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            found = json.load(reply)["runs"]
    assert sorted(r["info"]["run_name"] for r in found) == [
        f"offsets/trial-00{i}" for i in range(4)
    ]


def test_a_server_that_is_down_is_said_at_once_naming_it_and_no_trial_waits_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.servers import free_port

    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cfg = graded_config(tmp_path, {"env": "inline"}, tracking={"mlflow": down})
    folder = tmp_path / "runs" / "down"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = kit.sweep(cfg, ["offset=0,1,2"], output_dir=folder, metric="err")
    assert [str(r.status) for r in result.results if r is not None] == ["completed"] * 3
    said = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert said, "the outage is said"
    assert all(f"the MLflow server at {down} did not answer within 3 s" in m for m in said), said
    # Found at the start, not by waiting out MLflow's retries at each run's end.
    assert not any("was still being written" in m for m in said), said

    # The trackers were down; the folder has it all: sent again, as it happened.
    store = f"sqlite:///{tmp_path}/runs/mlflow.db"
    from kit.cli import EXIT_NOTHING, main

    assert main(["export-tracking", str(folder), "--mlflow", store]) == 0
    client = client_of(tmp_path)
    runs = runs_of(client)
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = sorted(
        (r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id),
        key=lambda r: r.info.run_name,
    )
    assert [r.info.run_name for r in trials] == [f"down/trial-00{i}" for i in range(3)]
    for run, trial in zip(trials, result.results, strict=True):
        assert run.info.status == "FINISHED"
        assert run.data.metrics["mean_y"] == pytest.approx(trial.summary["mean_y"])
        # Its own start and end, not the export's.
        events = [json.loads(line) for line in (trial.output_dir / "events.jsonl").open()]
        began = next(e["started"] for e in events if e["event"] == "RunStarted")
        assert run.info.start_time == int(began * 1000)
        assert run.info.end_time - run.info.start_time == pytest.approx(
            trial.stats.wall_seconds * 1000, abs=1000
        )
        assert run.data.tags["mlflow.source.type"] == "LOCAL" and run.data.tags["mlflow.user"]
    assert parent.data.metrics["trials/completed"] == 3
    assert parent.data.metrics["trials/pruned"] == 0
    # The sweep's metric is a per-item one (no summary gives it): its records' mean.
    assert parent.data.metrics["best/err"] == pytest.approx(0.375)
    experiment = client.get_experiment_by_name("kit")
    assert experiment is not None
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"

    # Sent where nothing answers: no run reached it, and the exit code says so.
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert main(["export-tracking", str(folder), "--mlflow", down]) == EXIT_NOTHING
    out, err = capsys.readouterr()
    assert out.count(" (the warning says why)\n") == 3
    assert err.endswith("kit: 3 of 3 run(s) not sent\n")


@pytest.mark.filterwarnings("ignore::kit.tracking.TrackingWarning")
def test_a_server_killed_mid_run_holds_the_run_back_seconds_at_most_and_it_is_sent_again(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path}/runs/mlflow.db"
    (tmp_path / "runs").mkdir()
    folder = tmp_path / "runs" / "graded"
    # The run waits at item 8 until the gate opens, after the server is gone: under load,
    # the server's shutdown took longer than the run, which then ended FINISHED there.
    gate = tmp_path / "gate"
    with mlflow_server(store, tmp_path) as url:
        cfg = graded_config(
            tmp_path, {"env": "inline"}, tracking={"mlflow": url}, gate=str(gate), gate_offset=0
        )
        runner, items = build_runner(kit.load_config(cfg))
        handle = runner.submit(items)
        wait_until(lambda: (folder / "tracking.json").exists(), "the MLflow run's start")
    # The server is gone (killed at the with's end) while the run goes on.
    gate.touch()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = handle.result(timeout=300)
    assert str(result.status) == "completed" and result.stats.ok == 24
    said = [str(w.message) for w in caught if issubclass(w.category, TrackingWarning)]
    assert any(f"send it again with `kit export-tracking {folder}`" in m for m in said), said
    from kit.cli import main

    # The server is back (on another port): the run is sent again through it.
    with mlflow_server(store, tmp_path) as again:
        assert main(["export-tracking", str(folder), "--mlflow", again]) == 0
        # The run begun through the first server stopped halfway and says so; the run
        # sent again from the folder is whole.
        client = MlflowClient(again)
        runs = {r.info.status: r for r in runs_of(client)}
        assert sorted(runs) == ["FAILED", "FINISHED"]
        assert runs["FAILED"].data.tags["kit.note"] == "stopped halfway: sent again"
        run = runs["FINISHED"]
        assert run.data.metrics["mean_y"] == pytest.approx(23.0)
        assert "report.html" in {a.path for a in client.list_artifacts(run.info.run_id)}
