"""The Experiment's "track" box: its runs and sweeps go to TensorBoard and MLflow."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from kit.widgets import Experiment
from tests.workloads import KeyedProvider, Shifted, toy_config


def test_the_track_box_exports_the_experiments_runs_and_sweeps(tmp_path: Path) -> None:
    runs = tmp_path / "r"
    app = Experiment(toy_config(), KeyedProvider, Shifted, indices=range(10), runs_dir=runs)
    assert app.track.value is False and app.viewers.value == ""
    assert app.run_panel.runner.tracking is None

    app.track.value = True
    assert f"tensorboard --logdir {runs / 'tensorboard'}" in app.viewers.value
    assert f"mlflow ui --backend-store-uri sqlite:///{runs / 'mlflow.db'}" in app.viewers.value
    app.run_panel.how_many.value = 4
    app.run_panel.run_button.click()
    assert str(app.run_panel.wait(timeout=120).status) == "completed"
    app.editor.fields["offset"].value = 5
    app.run_panel.run_button.click()
    assert str(app.run_panel.wait(timeout=120).status) == "completed"
    sweep = app.sweep("factor=2,3").result(timeout=120)
    assert [str(r.status) for r in sweep.results if r is not None] == ["completed"] * 2

    client = MlflowClient(f"sqlite:///{runs / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("kit")
    assert experiment is not None
    found = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(found) == [
        "001",
        "002",
        "sweep-001",
        "sweep-001/trial-000",
        "sweep-001/trial-001",
    ]
    assert found["002"].data.tags["kit.overrides"] == "offset=5"  # against the first config
    parent = found["sweep-001"].info.run_id
    assert found["sweep-001/trial-001"].data.tags["mlflow.parentRunId"] == parent
    assert (runs / "tensorboard" / "001").is_dir()
    assert (runs / "tensorboard" / "sweep-001" / "trial-001").is_dir()


def test_a_config_with_a_tracking_section_starts_ticked_and_unticking_exports_nothing(
    tmp_path: Path,
) -> None:
    config = toy_config(tracking={"tensorboard": str(tmp_path / "tb")})
    app = Experiment(config, KeyedProvider, Shifted, indices=range(10), runs_dir=tmp_path / "r")
    assert app.track.value is True
    command = f"tensorboard --logdir {tmp_path / 'tb'}"
    assert f"<code class='kit-viewer'>{command}</code>" in app.viewers.value
    assert app.viewers.value.count("<code") == 1  # no MLflow: the config names none
    app.track.value = False
    app.sweep("factor=2,3").result(timeout=120)
    assert not (tmp_path / "tb").exists()
