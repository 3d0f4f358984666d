"""TensorBoard logs of runs and sweeps, read back with TensorBoard's own reader and server."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import (
    EventAccumulator,
)
from tensorboard.backend.event_processing.event_multiplexer import (
    EventMultiplexer,
)
from tensorboard.plugins.hparams import plugin_data_pb2

import kit
from kit._from_config import build_runner
from tests.servers import tensorboard_server
from tests.tracking.test_mlflow import graded_config

#: Every session status the HParams plugin knows (its frontend asks for all of them).
STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]


def tensorboard_config(tmp_path: Path, parallel: dict[str, Any], **values: Any) -> dict[str, Any]:
    return graded_config(tmp_path, parallel, tracking={"tensorboard": True}, **values)


def hparams_data(multiplexer: EventMultiplexer) -> dict[str, Any]:
    """Per run of the log folder: its HParams plugin data (experiment or session start)."""
    out = {}
    for run, tags in multiplexer.PluginRunToTagToContent("hparams").items():
        for content in tags.values():
            out[run] = plugin_data_pb2.HParamsPluginData.FromString(content)
    return out


def test_a_run_logs_running_scalars_and_its_summary_as_it_goes(tmp_path: Path) -> None:
    runner, items = build_runner(kit.load_config(tensorboard_config(tmp_path, {"env": "inline"})))
    assert str(runner.run(items).status) == "completed"

    logs = EventAccumulator(str(tmp_path / "runs" / "tensorboard" / "graded")).Reload()
    assert {"items/done", "items/failed", "items/per_second", "running/err", "mean_y"} <= set(
        logs.Tags()["scalars"]
    )
    done = logs.Scalars("items/done")
    assert (done[-1].step, done[-1].value) == (24, 24.0)
    assert [e.step for e in done] == sorted(e.step for e in done)
    [summary] = logs.Scalars("mean_y")
    assert (summary.step, summary.value) == (24, pytest.approx(23.0))
    assert logs.Scalars("running/err")[-1].value == pytest.approx(0.375)


def test_a_sweep_is_an_hparams_experiment_with_a_session_per_trial(
    tmp_path: Path, local: dict[str, Any]
) -> None:
    cfg = tensorboard_config(tmp_path, local, output_dir=str(tmp_path / "runs" / "offsets"))
    kit.sweep(cfg, ["offset=0,1", "factor=2,3"], metric="mean_y")

    logs = EventMultiplexer().AddRunsFromDirectory(str(tmp_path / "runs" / "tensorboard"))
    data = hparams_data(logs.Reload())
    experiment = data.pop("offsets").experiment
    assert [h.name for h in experiment.hparam_infos] == ["offset", "factor"]
    assert [
        [v.number_value for v in h.domain_discrete.values] for h in experiment.hparam_infos
    ] == [
        [0.0, 1.0],
        [2.0, 3.0],
    ]
    assert [m.name.tag for m in experiment.metric_infos] == ["mean_y"]
    sessions = {
        run: {k: v.number_value for k, v in d.session_start_info.hparams.items()}
        for run, d in data.items()
    }
    assert sessions == {
        "offsets/trial-000": {"offset": 0, "factor": 2},
        "offsets/trial-001": {"offset": 0, "factor": 3},
        "offsets/trial-002": {"offset": 1, "factor": 2},
        "offsets/trial-003": {"offset": 1, "factor": 3},
    }


def test_two_sweeps_beside_each_other_keep_their_hparams_in_their_own_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from omegaconf import OmegaConf

    from kit.cli import main

    cfg = tensorboard_config(tmp_path, {"env": "inline"})
    kit.sweep(cfg, ["offset=0,1"], output_dir=tmp_path / "runs" / "offsets")
    config = tmp_path / "graded.yaml"
    OmegaConf.save(OmegaConf.create(cfg), config)
    factors = tmp_path / "runs" / "factors"
    assert main(["sweep", str(config), "factor=2,3", "-o", str(factors)]) == 0
    # Where the sweep's HParams view is: its own folder (TensorBoard reads one
    # experiment per log folder, so the common one would show one sweep's columns).
    watch = f"watch:     tensorboard --logdir {tmp_path / 'runs' / 'tensorboard' / 'factors'}\n"
    assert watch in capsys.readouterr().out
    for sweep, key in (("offsets", "offset"), ("factors", "factor")):
        folder = tmp_path / "runs" / "tensorboard" / sweep
        data = hparams_data(EventMultiplexer().AddRunsFromDirectory(str(folder)).Reload())
        experiment = data.pop(".").experiment
        assert [h.name for h in experiment.hparam_infos] == [key], sweep
        assert sorted(data) == ["trial-000", "trial-001"], sweep
        assert all(list(d.session_start_info.hparams) == [key] for d in data.values()), sweep


def test_tensorboard_shows_a_sweeps_trials_in_its_hparams_table(
    chromium: Any, tmp_path: Path, local: dict[str, Any]
) -> None:
    cfg = tensorboard_config(tmp_path, local, output_dir=str(tmp_path / "runs" / "offsets"))
    swept = kit.sweep(cfg, ["offset=0,1", "factor=2,3"], metric="mean_y")
    assert [row["status"] for row in swept.rows()] == ["completed"] * 4, swept.errors
    logdir = tmp_path / "runs" / "tensorboard"

    with tensorboard_server(logdir, tmp_path) as url:
        # TensorBoard reads the folder after it starts answering: wait until it has all 5 runs.
        deadline = time.monotonic() + 120
        while len(runs := json.load(urllib.request.urlopen(f"{url}/data/runs", timeout=30))) < 5:
            files = sorted(str(p.relative_to(logdir)) for p in logdir.rglob("*"))
            assert time.monotonic() < deadline, f"TensorBoard read 5 runs in 120 s: {runs} {files}"
            time.sleep(0.2)
        # The server's own answer first: the HParams plugin sees 4 sessions with mean_y.
        request = urllib.request.Request(
            f"{url}/data/plugin/hparams/session_groups",
            data=json.dumps(
                {"startIndex": 0, "sliceSize": 100, "allowedStatuses": STATUSES}
            ).encode(),
            headers={"Content-Type": "application/json", "X-XSRF-Protected": "1"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            groups = json.load(reply)["sessionGroups"]
        assert len(groups) == 4
        page = chromium.new_page(viewport={"width": 1400, "height": 800})
        page.goto(f"{url}/#hparams", wait_until="networkidle")
        # TensorBoard draws in shadow DOM: playwright's locators look inside it.
        last = page.get_by_text("trial-003", exact=True)
        last.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "hparams.png"), full_page=True)
        # One row per trial with its swept values and its mean_y (23 = mean of 2*i, i < 24).
        for shown in ("trial-000", "trial-001", "trial-002", "factor", "offset", "mean_y"):
            assert page.get_by_text(shown, exact=True).count() >= 1, shown
        for mean_y in ("23.000", "34.500", "24.000", "35.500"):
            assert page.get_by_text(mean_y, exact=True).count() == 1, mean_y
