"""The Experiment's sweep: a grid over the config as edited, on the panel's items and cluster."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import kit
from kit.widgets import Experiment, SweepView
from tests.workloads import KeyedProvider, Shifted, lines, toy_config


def test_an_experiment_sweeps_the_edited_config_on_the_panel_items_and_cluster(
    local: dict, tmp_path: Path
) -> None:
    config = toy_config(tmp_path, sleep=0.01)
    config.parallel = local
    app = Experiment(config, KeyedProvider, Shifted, indices=range(100), runs_dir=tmp_path / "r")
    app.run_panel.how_many.value = 12
    app.editor.fields["factor"].value = 3  # the sweep starts from the config as edited
    app.sweep_bar.overrides.value = "offset=0,10,20"
    app.sweep_bar.button.click()
    assert not app.sweep_bar.error.value
    (view,) = app.sweep_bar.sweeps
    view.metric = "y_mean"  # a summary the trials do not have: no plot, no error
    assert app.sweep_bar.box.children == (view,)
    result = view.result(timeout=120)
    assert [row["status"] for row in result.rows()] == ["completed"] * 3, result.errors
    for offset, run in zip((0, 10, 20), result.results, strict=True):
        assert [r["y"] for r in run.records] == [3 * i + offset for i in range(12)]
    # The panel's cluster, one env per worker for all three trials (env keys: factor).
    assert len(lines(tmp_path, "setup.log")) == 2
    table = view.table.value
    assert table.count("<tr class='kit-trial-row' data-status='completed'>") == 3
    assert "12/12" in table
    assert "offset" in table and ">20<" in table
    folder = tmp_path / "r" / "sweep-001"
    stored = json.loads((folder / "sweep.json").read_text())
    assert [t["overrides"] for t in stored["trials"]] == [[f"offset={o}"] for o in (0, 10, 20)]
    assert kit.attach(folder).result(timeout=10).rows()[2]["offset"] == "20"
    assert app.history == []  # a sweep's trials are not the run history's rows
    assert view.plots.children == ()
    # What a static page (the manual's notebooks) shows instead of the widget.
    assert repr(view) == f"<Kit sweep in {folder}: 3/3 trials done, 0 running; live in Jupyter>"


def test_a_bad_sweep_is_shown_under_its_field_and_leaves_no_folder(tmp_path: Path) -> None:
    app = Experiment(toy_config(), KeyedProvider, Shifted, indices=range(5), runs_dir=tmp_path)
    app.sweep_bar.overrides.value = "offset=[0,1"
    app.sweep_bar.button.click()
    assert "cannot parse override 'offset=[0,1'" in app.sweep_bar.error.value.replace("&#x27;", "'")
    assert app.sweep_bar.sweeps == [] and list(tmp_path.iterdir()) == []


def test_a_sweep_view_follows_any_handle_and_cancels_it(tmp_path: Path) -> None:
    config = {
        "provider": {"_target_": "tests.workloads.KeyedProvider"},
        "runner": {"_target_": "tests.workloads.Shifted", "chunk_size": 1},
        "items": {"start": 0, "stop": 400},
        "factor": 2,
        "offset": 0,
        "sleep": 0.02,
        "log_dir": str(tmp_path),
        "parallel": {"env": "inline"},
    }
    handle = kit.submit_sweep(config, ["offset=0,1"], output_dir=tmp_path / "s", concurrency=1)
    view = SweepView(handle, interval=0.05)
    assert "data-status='running'" in view.table.value or "pending" in view.table.value
    view.cancel_button.click()
    result = view.result(timeout=60)
    assert result.rows()[0]["status"] == "cancelled"
    assert view.cancel_button.disabled and "cancelled" in view.header.value


def test_a_sweep_view_with_a_metric_draws_the_plots_under_the_table(tmp_path: Path) -> None:
    handle = kit.submit_sweep(
        kit._sweeps.sweep.EXAMPLE, ["items.stop=2,5"], output_dir=tmp_path / "s"
    )
    view = SweepView(handle, metric="max_y")
    view.result(timeout=60)
    (plot,) = view.plots.children
    assert type(plot).__name__ == "BokehModel"


def test_result_returns_with_the_plots_another_thread_was_drawing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = kit.submit_sweep(
        kit._sweeps.sweep.EXAMPLE, ["items.stop=2,5"], output_dir=tmp_path / "s"
    )
    handle.result(timeout=60)
    started, release = threading.Event(), threading.Event()
    draw_plots = kit.dashboard.sweep_plots

    def held_plots(result: kit.SweepResult, metric: str) -> object:
        started.set()
        release.wait(timeout=60)
        return draw_plots(result, metric)

    monkeypatch.setattr(kit.dashboard, "sweep_plots", held_plots)
    view = SweepView(handle, interval=3600)
    view.metric = "max_y"
    threading.Thread(target=view.draw, daemon=True).start()  # as the follow thread does
    assert started.wait(timeout=60)
    threading.Timer(0.2, release.set).start()
    view.result(timeout=60)
    (plot,) = view.plots.children
    assert type(plot).__name__ == "BokehModel"
