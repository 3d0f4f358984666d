"""ClusterPanel, RunPanel and Experiment, headless, on a real LocalCluster."""

from __future__ import annotations

import html
import time
from typing import Any

import pytest

import kit
from tests.workloads import Affine, ToyProvider, toy_config
from widgets import ClusterPanel, Experiment, RunPanel

pytestmark = pytest.mark.slow


def wait_for(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_cluster_panel_drives_the_session_runners_use() -> None:
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "panel"}}
    panel = ClusterPanel(parallel, refresh_seconds=0.2)
    panel.start_button.click()
    # The click returned before the cluster was up: the kernel stays free meanwhile.
    assert panel.ready is not None and panel.session is None
    assert "starting" in panel.status.value and panel.start_button.disabled
    try:
        panel.ready.result(timeout=120)
        assert panel.session is not None and panel.session in kit.sessions()
        wait_for(lambda: "<td>running</td>" in panel.workers.value)
        result = Affine(ToyProvider(toy_config()), parallel=parallel).run(range(10))
        assert result.stats.workers.keys() == {"0"}  # ran on the panel's cluster
        assert kit.get_session(parallel) is panel.session
        panel.n_workers.value = 2
        panel.scale_button.click()
        wait_for(lambda: panel.workers.value.count("<td>running</td>") == 2)
        assert (
            "Dask dashboard" in panel.status.value
            or "scheduler tcp://127.0.0.1" in panel.status.value
        )
    finally:
        panel.stop_button.click()
    assert panel.session is None and "stopped" in panel.status.value


def test_cluster_panel_shows_the_job_script_for_job_queues() -> None:
    pytest.importorskip("dask_jobqueue")
    options = {"cores": 1, "memory": "1GB", "scheduler_options": {"host": "127.0.0.1"}}
    panel = ClusterPanel({"env": "local", "options": options})
    assert panel.script.value == ""
    panel.env.value = "slurm"
    assert "#SBATCH" in panel.script.value


def test_cluster_panel_shows_errors_instead_of_losing_them() -> None:
    panel = ClusterPanel({"env": "remote"})
    panel.start_button.click()
    assert panel.ready is not None and panel.ready.exception(timeout=30) is not None
    assert not panel.start_button.disabled
    assert "env 'remote' needs the scheduler address" in html.unescape(panel.status.value)


def test_run_panel_checks_a_few_items_and_shows_failures(local: dict) -> None:
    runner = Affine(ToyProvider(toy_config(fail_on=[2])), parallel=local)
    panel = RunPanel(runner, range(1000), base_config=toy_config(), config_path="exp.yaml")
    panel.how_many.value = 6
    panel.run_button.click()
    assert panel.handle is not None  # returned at once; the run goes on in the background
    result = panel.wait(timeout=60)
    assert result.indices == [0, 1, 2, 3, 4, 5]
    wait_for(lambda: "kit-results" in panel.table.value)
    assert panel.table.value.count("kit-ok") == 5 and panel.table.value.count("kit-failed") == 1
    assert "ValueError: item 2 is broken" in panel.table.value and "<details>" in panel.table.value
    assert panel.dashboard is not None
    wait_for(lambda: panel.dashboard.state.status == "completed")
    assert "1 failed" in panel.status.value


def test_run_panel_random_sample_and_cancel(local: dict) -> None:
    runner = Affine(ToyProvider(toy_config(sleep=0.05)), parallel=local, chunk_size=1)
    panel = RunPanel(runner, range(1000))
    panel.how.value = "random"
    panel.seed.value = 3
    panel.how_many.value = 200
    sample = panel.selected()
    assert len(sample) == 200 and sample == sorted(sample) and sample != list(range(200))
    panel.run_button.click()
    wait_for(lambda: panel.handle is not None and panel.handle.progress.done >= 4)
    panel.cancel_button.click()
    result = panel.wait(timeout=60)
    assert result.status == "cancelled" and result.stats.ok < 200


def test_run_panel_shows_the_scale_out_command() -> None:
    base = toy_config()
    edited = kit.load_config(base, ["factor=5", "+beam=4"])
    panel = RunPanel(
        Affine(ToyProvider(edited)), range(10), base_config=base, config_path="exp.yaml"
    )
    panel.scale_button.click()
    assert panel.scale_out_command() == "kit submit exp.yaml factor=5 +beam=4 parallel.env=slurm"
    assert "kit submit exp.yaml factor=5 +beam=4 parallel.env=slurm" in panel.command.value


def test_run_panel_errors_are_shown_in_the_panel() -> None:
    panel = RunPanel(Affine(ToyProvider(toy_config())), range(10))
    panel.runner = "not a runner"  # type: ignore[assignment]  # a broken callback's input
    panel.run_button.click()
    assert "AttributeError" in panel.error.value and not panel.run_button.disabled


def test_experiment_compares_runs(local: dict) -> None:
    config = toy_config()
    config.parallel = local
    app = Experiment(config, ToyProvider, Affine, indices=range(100), config_path="exp.yaml")
    app.run_panel.how_many.value = 10
    app.run_panel.run_button.click()
    app.run_panel.wait(timeout=60)
    app.editor.fields["factor"].value = 4
    app.run_panel.run_button.click()
    second = app.run_panel.wait(timeout=60)
    assert second.records[3] == {"idx": 3, "y": 13}
    wait_for(lambda: len(app.history) == 2)
    assert [row["changes"] for row in app.history] == ["(first run)", "factor=4"]
    assert app.history[1]["mean_y"] == pytest.approx(sum(4 * i + 1 for i in range(10)) / 10)
    assert "factor=4" in app._history.value
    assert app.run_panel.scale_out_command() == "kit submit exp.yaml factor=4 parallel.env=slurm"


def test_experiment_shows_a_bad_config_without_breaking() -> None:
    app = Experiment(toy_config(), ToyProvider, Affine, indices=range(10))
    app.editor.add_key("runner", "{chunk_size: 0}")  # rejected by the editor itself
    message = html.unescape(app.editor._message.value)
    assert "runner.chunk_size: must be 'auto' or an integer >= 1" in message
