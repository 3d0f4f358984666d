"""ClusterPanel, RunPanel and Experiment, headless, on a real LocalCluster."""

from __future__ import annotations

import html
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.widgets import ClusterPanel, Experiment, RunPanel
from tests.workloads import Affine, Decodes, MistypedProvider, ToyProvider, toy_config

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
        assert panel.session is not None and panel.session in kit.cluster.sessions()
        wait_for(lambda: "<td>running</td>" in panel.workers.value)
        result = Affine(ToyProvider(toy_config()), parallel=parallel).run(range(10))
        assert result.stats.workers.keys() == {"0"}  # ran on the panel's cluster
        assert kit.get_session(parallel) is panel.session
        panel.n_workers.value = 2
        panel.scale_button.click()
        wait_for(lambda: panel.workers.value.count("<td>running</td>") == 2)
        assert (
            "Dask dashboard" in panel.status.value
            or "scheduler tls://127.0.0.1" in panel.status.value
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
    # Only what ran is drawn, then one line for the rest: no rows of "None".
    table = panel.table.value
    assert "None" not in table and table.count("kit-ok") == result.stats.ok
    assert f"{200 - result.stats.ok} items not run (cancelled)" in table
    assert "data-status='cancelled'" in panel.status.value and "not run" in panel.status.value


def test_run_panel_shows_the_scale_out_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the notebook's folder
    base = toy_config()
    edited = kit.load_config(base, ["factor=5", "+beam=4"])
    panel = RunPanel(
        Affine(ToyProvider(edited)), range(10), base_config=base, config_path="exp.yaml"
    )
    panel.scale_button.click()
    command = (
        "kit submit runs/scale-out/exp.yaml factor=5 +beam=4 +parallel.env=slurm "
        "+parallel.options.cores=1 +parallel.options.memory=2GB"
    )
    assert panel.scale_out_command() == command
    assert command in panel.command.value and "kit-copy" in panel.command.value
    # Named but never written: written now (or the command would not run), with the
    # runs, not beside the notebook (often a repository's folder).
    assert kit.load_config(str(tmp_path / "runs" / "scale-out" / "exp.yaml")) == base
    assert not (tmp_path / "exp.yaml").exists()
    # A file beside the notebook is named as it is.
    (tmp_path / "mine.yaml").write_text("factor: 2\noffset: 1\n")
    panel.sample.config_path = str(tmp_path / "mine.yaml")
    assert panel.scale_out_command().startswith("kit submit mine.yaml factor=5")


def test_the_scale_out_command_runs_as_printed_from_the_notebook_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("dask_jobqueue")
    package = tmp_path / "site-packages" / "example"  # a config shipped inside a package
    package.mkdir(parents=True)
    (package / "decode.yaml").write_text("factor: 2\noffset: 1\nparallel:\n  env: local\n")
    notebook_folder = tmp_path / "notebooks"
    notebook_folder.mkdir()
    monkeypatch.chdir(notebook_folder)
    base = kit.load_config(package / "decode.yaml")
    edited = kit.load_config(base, ["factor=5"])
    panel = RunPanel(
        Affine(ToyProvider(edited)),
        range(10),
        base_config=base,
        config_path=str(package / "decode.yaml"),
    )
    command = panel.scale_out_command()
    assert command == (
        "kit submit runs/scale-out/decode.yaml factor=5 parallel.env=slurm "
        "+parallel.options.cores=1 +parallel.options.memory=2GB"
    )
    assert (notebook_folder / "runs" / "scale-out" / "decode.yaml").exists()
    assert not (notebook_folder / "decode.yaml").exists()  # nothing new beside the notebook
    # As printed, from the notebook's folder (the job script shows what would be submitted).
    words = command.split()
    result = subprocess.run(
        [sys.executable, "-m", "kit", "cluster", "script", *words[2:]],
        capture_output=True,
        text=True,
        check=False,
        cwd=notebook_folder,
    )
    assert result.returncode == 0, result.stderr
    assert "#SBATCH --cpus-per-task=1" in result.stdout and "#SBATCH --mem=" in result.stdout


def test_run_panel_errors_are_shown_in_the_panel() -> None:
    panel = RunPanel(Affine(ToyProvider(toy_config())), range(10))
    panel.runner = "not a runner"  # type: ignore[assignment]  # a broken callback's input
    panel.run_button.click()
    assert "AttributeError" in panel.error.value and not panel.run_button.disabled


def test_experiment_compares_runs(
    local: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the notebook's folder
    config = toy_config()
    config.parallel = local
    app = Experiment(
        config, ToyProvider, Affine, indices=range(100), config_path="exp.yaml", runs_dir=tmp_path
    )
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
    # What a static page (the manual's notebooks) shows instead of the widget.
    assert (
        repr(app)
        == f"<Kit experiment: Affine over ToyProvider, 2 runs in {tmp_path}; live in Jupyter>"
    )
    # The config is saved in the app's runs folder (here the notebook's folder too).
    assert app.run_panel.scale_out_command() == (
        "kit submit exp.yaml factor=4 parallel.env=slurm +parallel.options.cores=1 "
        "+parallel.options.memory=2GB"
    )


def test_the_check_button_shows_the_verdict_with_a_forecast_for_the_scale_out_cluster(
    local: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = toy_config()
    config.parallel = local
    app = Experiment(config, ToyProvider, Affine, indices=range(100), runs_dir=tmp_path)
    panel = app.run_panel
    panel.how_many.value = 6
    panel.check_button.click()
    assert panel.check_button.disabled  # one check at a time
    verdict = panel.checking.verdict.result(timeout=120)  # type: ignore[union-attr]
    wait_for(lambda: not panel.check_button.disabled)
    assert verdict.ok and len(verdict.sample) == 6
    assert "data-ok='true'" in panel.check_box.value and ">PASS</b>" in panel.check_box.value
    assert "reference vs worker: 6" in panel.check_box.value
    # Forecast for where Scale out sends it: a SLURM job of one core (its default) a worker.
    jobs = local["n_workers"]
    assert verdict.forecast is not None
    assert (verdict.forecast.items, verdict.forecast.slots) == (100, jobs)
    assert verdict.memory is not None and verdict.memory.limit_bytes == 2 * 10**9
    assert f"100 items on {jobs} slots" in html.unescape(panel.check_box.value)


def test_a_check_that_fails_to_start_shows_its_error(tmp_path: Path) -> None:
    config = kit.load_config(toy_config(), ["+mode=bogus"])
    app = Experiment(config, MistypedProvider, Affine, indices=range(10), runs_dir=tmp_path)
    panel = app.run_panel
    panel.check_button.click()
    with pytest.raises(kit.ConfigError, match=r"decoder\.mode"):
        panel.checking.verdict.result(timeout=60)  # type: ignore[union-attr]
    wait_for(lambda: not panel.check_button.disabled)
    assert panel.check_box.value == "" and "decoder.mode" in panel.error.value


def test_experiment_shows_a_bad_config_without_breaking(tmp_path: Path) -> None:
    app = Experiment(toy_config(), ToyProvider, Affine, indices=range(10), runs_dir=tmp_path)
    app.editor.add_key("runner", "{chunk_size: 0}")  # rejected by the editor itself
    message = html.unescape(app.editor._message.value)
    assert "runner.chunk_size: must be 'auto' or an integer >= 1" in message


def test_a_failing_provider_shows_its_error_and_the_run_button_works_again(
    local: dict, tmp_path: Path
) -> None:
    config = toy_config(mode="gramar")
    config.parallel = local
    app = Experiment(config, MistypedProvider, Decodes, indices=range(10), runs_dir=tmp_path)
    app.run_panel.how_many.value = 4
    app.run_panel.run_button.click()
    with pytest.raises(kit.ConfigError, match="did you mean 'grammar'"):
        app.run_panel.wait(timeout=120)
    wait_for(lambda: len(app.history) == 1)
    error = html.unescape(app.run_panel.error.value)
    assert "ConfigError: decoder.mode: 'gramar' is not a valid choice; did you mean" in error
    assert "AssertionError" not in error
    assert "data-status='error'" in app.run_panel.status.value
    assert not app.run_panel.run_button.disabled and app.run_panel.cancel_button.disabled
    assert app.run_panel.dashboard_box.children == ()  # nothing ran: no empty plots
    row = app.history[0]
    assert row["status"] == "error" and "did you mean 'grammar'" in row["error"]
    assert (row["items"], row["ok"], row["failed"]) == (4, 0, 0)  # asked for 4, none ran
    # Fixed, it runs; the history keeps both.
    app.editor.fields["mode"].value = "grammar"
    app.run_panel.run_button.click()
    app.run_panel.wait(timeout=120)
    wait_for(lambda: len(app.history) == 2)
    assert [r["status"] for r in app.history] == ["error", "completed"]
    assert app.history[1]["changes"] == "mode=grammar"


def test_the_history_is_read_back_from_disk_in_a_new_app(tmp_path: Path) -> None:
    first = Experiment(toy_config(), ToyProvider, Affine, indices=range(20), runs_dir=tmp_path)
    first.run_panel.how_many.value = 5
    first.run_panel.run_button.click()
    first.run_panel.wait(timeout=60)
    first.editor.fields["factor"].value = 7
    first.run_panel.run_button.click()
    first.run_panel.wait(timeout=60)
    wait_for(lambda: len(first.history) == 2)
    # A restarted kernel, or a colleague's notebook on the same folder.
    again = Experiment(toy_config(), ToyProvider, Affine, indices=range(20), runs_dir=tmp_path)
    assert again.history == first.history
    assert [r["run"] for r in again.history] == ["001", "002"]
    assert [r["changes"] for r in again.history] == ["(first run)", "factor=7"]
    assert "factor=7" in again._history.value


def test_runs_use_the_cluster_panel_cluster(tmp_path: Path) -> None:
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "experiment"}}
    config = toy_config()
    config.parallel = parallel
    app = Experiment(config, ToyProvider, Affine, indices=range(20), runs_dir=tmp_path)
    try:
        assert "stopped" in app.cluster.status.value
        app.run_panel.how_many.value = 4
        app.run_panel.run_button.click()
        app.run_panel.wait(timeout=120)
        # The run started the cluster: the panel shows it, not "stopped".
        wait_for(lambda: app.cluster.session is not None)
        assert "running" in app.cluster.status.value
        first = app.cluster.session
        # Stop, two workers, Start: the next run uses that cluster, not a second one.
        app.cluster.stop_button.click()
        app.cluster.n_workers.value = 2
        app.cluster.start_button.click()
        assert app.cluster.ready is not None
        started = app.cluster.ready.result(timeout=120)
        assert started is not first and started.parallel.n_workers == 2
        app.run_panel.run_button.click()
        app.run_panel.wait(timeout=120)
        assert app.run_panel.handle is not None and app.run_panel.handle.session is started
        assert [
            s for s in kit.cluster.sessions() if s.parallel.options.get("name") == "experiment"
        ] == [started]
    finally:
        app.cluster.stop_button.click()


def test_the_items_are_set_in_the_config_and_follow_its_edits(tmp_path: Path) -> None:
    config = toy_config(items={"start": 0, "stop": 30})
    app = Experiment(config, ToyProvider, Affine, runs_dir=tmp_path)
    panel = app.run_panel
    assert panel.sample.indices == list(range(30)) and "of 30 items" in panel.pool.value
    assert "config items" in panel.pool.value
    app.editor.fields["items.stop"].value = 6
    wait_for(lambda: len(panel.sample.indices) == 6)
    assert panel.how_many.value == 6 and panel.how_many.max == 6  # was 10 of 30
    assert "of 6 items" in panel.pool.value
    panel.run_button.click()
    assert [r["idx"] for r in panel.wait(timeout=60).records] == list(range(6))


def test_items_given_twice_or_not_at_all_say_where_to_give_them(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="the items are given twice: by indices= and by the"):
        Experiment(toy_config(items={"stop": 3}), ToyProvider, Affine, indices=range(3))
    with pytest.raises(ValueError, match=r"no items: give indices= \(e\.g\. indices=range"):
        Experiment(toy_config(), ToyProvider, Affine, runs_dir=tmp_path)


def test_run_refuses_a_config_with_problems_and_lists_them_all(tmp_path: Path) -> None:
    from kit.asr import DecodeProvider, DecodeRunner

    config = {"decoder": {"engine": "wisper", "beam_size": 0}, "data": {"root": "x"}}
    app = Experiment(config, DecodeProvider, DecodeRunner, indices=range(3), runs_dir=tmp_path)
    app.run_panel.run_button.click()
    shown = html.unescape(app.run_panel.error.value)
    assert "the config has 2 problems, each shown next to its field above" in shown
    assert "decoder.engine: 'wisper'" in shown and "decoder.beam_size: must be at least 1" in shown
    assert app.run_panel.handle is None and not list(tmp_path.iterdir())  # nothing ran


def test_the_history_compares_like_with_like(tmp_path: Path) -> None:
    config = {
        "factor": 2,
        "offset": 1,
        "name": "x",
        "tag": "${name}-t",  # resolved differently when name changes: no edit of its own
        "output_dir": "runs/out/${name}",
        "parallel": {"env": "inline"},
    }
    runs = tmp_path / "runs"
    earlier = Experiment(config, ToyProvider, Affine, indices=range(20), runs_dir=runs)
    earlier.run_panel.how_many.value = 3
    earlier.run_panel.run_button.click()
    earlier.run_panel.wait(timeout=30)
    app = Experiment(config, ToyProvider, Affine, indices=range(20), runs_dir=runs)
    panel = app.run_panel
    panel.how_many.value = 5
    panel.run_button.click()
    panel.wait(timeout=30)
    app.editor.fields["name"].value = "y"
    panel.run_button.click()
    panel.wait(timeout=30)
    panel.how.value, panel.seed.value = "random", 3
    panel.run_button.click()
    panel.wait(timeout=30)
    wait_for(lambda: len(app.history) == 4)
    rows = app.compare()  # this app's runs, not the earlier notebook's
    assert [row["run"] for row in rows] == ["002", "003", "004"]
    assert [row["changes"] for row in rows] == ["(first run)", "name=y", "name=y"]
    assert [row["sample"] for row in rows] == [
        "first 5 of 20",
        "first 5 of 20",
        "random 5 of 20, seed 3 · not the items of 002",
    ]
    assert "kit-other-items" in app._history.value  # the table marks that row too
    assert [row["run"] for row in app.compare(["001", "004"])] == ["001", "004"]


def test_a_parallel_edit_is_the_cluster_the_next_run_starts(tmp_path: Path) -> None:
    # A cluster of its own: the tests' shared one, running, is what runs would use.
    config = toy_config(parallel={"env": "local", "n_workers": 2, "options": {"name": "edit"}})
    app = Experiment(config, ToyProvider, Affine, indices=range(10), runs_dir=tmp_path)
    app.editor.fields["parallel.n_workers"].value = "1"
    assert app.cluster.for_runs().n_workers == 1 and app.cluster.n_workers.value == 1


def test_the_cluster_panel_says_scaling_only_until_the_workers_are_there() -> None:
    panel = ClusterPanel(
        {"env": "local", "n_workers": 1, "options": {"name": "scaling"}}, refresh_seconds=0.2
    )
    panel.start_button.click()
    panel.ready.result(timeout=120)  # type: ignore[union-attr]
    try:
        panel.n_workers.value = 2
        panel.scale_button.click()
        assert "scaling to 2 workers" in panel.status.value
        wait_for(lambda: "scaling" not in panel.status.value)
        assert "running" in panel.status.value and panel.workers.value.count("<tr") == 3
        # Closed elsewhere (kit.shutdown() in another cell): no dead links left on show.
        assert panel.session is not None
        panel.session.close()
        wait_for(lambda: "stopped" in panel.status.value)
        assert "Dask dashboard" not in panel.status.value and panel.workers.value == ""
    finally:
        panel.stop()


def test_attendees_on_one_server_keep_their_histories_apart_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two attendees, one notebooks folder: each Experiment numbers and reads its own runs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "02_decoding_check.ipynb"))
    apps = {}
    for who in ("alice", "bob"):
        monkeypatch.setenv("JUPYTERHUB_USER", who)
        apps[who] = Experiment(toy_config(), ToyProvider, Affine, indices=range(20))
    alice, bob = apps["alice"], apps["bob"]
    assert alice.runs_dir == Path("runs/alice/02_decoding_check/affine")
    assert bob.runs_dir == Path("runs/bob/02_decoding_check/affine")
    alice.run_panel.how_many.value = 5
    alice.run_panel.run_button.click()
    alice.run_panel.wait(timeout=60)
    wait_for(lambda: len(alice.history) == 1)
    assert [r["run"] for r in alice.history] == ["001"]
    bob.refresh()
    assert bob.history == []  # Bob's history holds none of Alice's runs


def test_an_app_opens_before_its_data_exists_and_its_pool_fills_in_with_the_data(
    tmp_path: Path,
) -> None:
    # Without items.stop the items are the whole set: counting it needs the data, and
    # an app whose data is not there yet (or is edited in the app) failed to open.
    import json

    from kit.asr import DecodeProvider, DecodeRunner
    from kit.examples.asr import CONFIG_PATH
    from tests.speech import write_wav

    missing = tmp_path / "none.jsonl"
    config = kit.load_config(CONFIG_PATH, [f"data.manifest={missing}", "parallel.env=inline"])
    app = Experiment(config, DecodeProvider, DecodeRunner, runs_dir=tmp_path / "runs")
    panel = app.run_panel
    assert panel.sample.indices == [] and "of 0 items" in panel.pool.value
    assert (
        "the whole set, not readable yet" in panel.pool.value and "none.jsonl" in panel.pool.value
    )
    write_wav(tmp_path / "a.wav")
    manifest = tmp_path / "two.jsonl"
    lines = [{"id": f"u{n}", "audio": "a.wav", "text": "hello"} for n in range(2)]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app.editor.fields["data.manifest"].value = str(manifest)
    wait_for(lambda: len(panel.sample.indices) == 2)
    assert "of 2 items" in panel.pool.value
