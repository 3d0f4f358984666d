"""`kit run` and `kit submit`: jobs described by a config, exit codes, the scale-out step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kit
from tests.servers import free_port
from tests.workloads import outliving

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """\
provider:
  _target_: tests.workloads.ToyProvider
runner:
  _target_: tests.workloads.Affine
  chunk_size: 8
items:
  start: 0
  stop: 50
factor: 2
offset: 1
parallel:
  env: local
  n_workers: 2
output_dir: {out}
"""


def kit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kit", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(CONFIG.format(out=tmp_path / "out"))
    return path


def test_kit_run_runs_the_job_and_exits_0(config: Path, tmp_path: Path) -> None:
    result = kit_cli("run", str(config))
    assert result.returncode == 0, result.stderr
    assert "50 ok, 0 failed, 0 not run" in result.stdout
    assert f"results: {tmp_path / 'out'}" in result.stdout
    assert "50 items on 2 worker(s)" in result.stderr
    assert "50/50 100%" in result.stderr and "items/s" in result.stderr
    records = kit.attach(tmp_path / "out").result().records
    assert records[49] == {"idx": 49, "y": 99}


def test_kit_run_with_failed_items_exits_1_with_a_summary(config: Path) -> None:
    result = kit_cli("run", str(config), "+fail_on=[3,4]", "parallel.env=inline")
    assert result.returncode == 1
    assert "48 ok, 2 failed" in result.stdout
    assert "item 3 (position 3) failed on worker driver: builtins.ValueError: item 3 is broken" in (
        result.stdout
    )
    assert "2 failed" in result.stderr


def test_kit_run_with_an_item_file(config: Path, tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("# a comment\n5\n7\n\n9\n")
    result = kit_cli(
        "run",
        str(config),
        "~items.start",
        "~items.stop",
        f"+items.file={ids}",
        f"output_dir={tmp_path / 'by-file'}",
    )
    assert result.returncode == 0, result.stderr
    assert kit.attach(tmp_path / "by-file").result().indices == [5, 7, 9]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "runner._target_=tests.workloads.Nope",
            "runner._target_: cannot import 'tests.workloads.Nope'",
        ),
        (
            "provider._target_=tests.workloads.Affine",
            "provider._target_: 'tests.workloads.Affine' is not a subclass of "
            "kit.EnvironmentProvider",
        ),
        ("~items", "items: `kit run` needs this section"),
        (
            "parallel.env=slurmm",
            "parallel.env: 'slurmm' is not a valid choice; did you mean 'slurm'?",
        ),
        ("factor=???", "1 required value is missing (???): factor"),
    ],
)
def test_bad_config_exits_2_without_traceback(config: Path, override: str, message: str) -> None:
    result = kit_cli("run", str(config), override)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_changed_config_into_the_same_output_dir_exits_2(config: Path) -> None:
    assert kit_cli("run", str(config), "parallel.env=inline").returncode == 0
    result = kit_cli("run", str(config), "parallel.env=inline", "factor=3")
    assert result.returncode == 2
    assert "holds a run of a different config" in result.stderr and "factor=3" in result.stderr


@pytest.mark.slow
def test_kit_submit_is_the_detached_form(config: Path, tmp_path: Path) -> None:
    result = kit_cli("submit", str(config), "items.stop=200", "+sleep=0.01")
    assert result.returncode == 0, result.stderr
    assert f"output {tmp_path / 'out'}" in result.stdout
    assert f"kit status {tmp_path / 'out'}" in result.stdout
    outcome = kit.attach(tmp_path / "out").result(timeout=120)
    assert outcome.stats.ok == 200


def test_kit_run_and_kit_submit_export_to_the_trackers_whose_viewers_they_print(
    config: Path, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    store = f"sqlite:///{tmp_path}/mlflow.db"
    tracking = [f"tracking.mlflow={store}", "tracking.tensorboard=true"]
    result = kit_cli("run", str(config), "parallel.env=inline", "offset=3", *tracking)
    assert result.returncode == 0, result.stderr
    assert f"watch:     tensorboard --logdir {tmp_path / 'tensorboard'}\n" in result.stdout
    assert f"watch:     mlflow ui --backend-store-uri {store}\n" in result.stdout
    assert (tmp_path / "tensorboard" / "out").is_dir()
    submitted = kit_cli(
        "submit",
        str(config),
        "parallel.env=inline",
        f"tracking.mlflow={store}",
        "-o",
        str(tmp_path / "detached"),
    )
    assert submitted.returncode == 0, submitted.stderr
    assert f"  watch:     mlflow ui --backend-store-uri {store}\n" in submitted.stdout

    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("kit")
    assert experiment is not None

    def finished() -> dict[str, object]:
        runs = client.search_runs([experiment.experiment_id])
        return {r.info.run_name: r for r in runs if r.info.status == "FINISHED"}

    deadline = time.monotonic() + 120
    while len(finished()) < 2:  # the detached driver exports as its run ends
        assert time.monotonic() < deadline, "the detached run reached MLflow within 120 s"
        time.sleep(0.2)
    runs = finished()
    assert runs["out"].data.tags["kit.overrides"] == "parallel.env=inline offset=3"
    assert runs["out"].data.params["offset"] == "3"
    assert runs["detached"].data.metrics["items/done"] == 50


def test_two_submits_at_once_one_runs_and_the_other_is_refused(
    config: Path, tmp_path: Path
) -> None:
    # The run holds at its first item until the gate (a file) opens: on a busy machine
    # the second submit could otherwise start after the first run ended, and resume it.
    gate = tmp_path / "gate"
    config.write_text(config.read_text() + f"gate: {gate}\ngate_from: 0\n")
    command = [sys.executable, "-m", "kit", "submit", str(config), "parallel.env=inline"]
    both = [
        subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120) for proc in both]
    codes = sorted(proc.returncode for proc in both)
    assert codes == [0, 2], outputs
    refused = next(err for proc, (_, err) in zip(both, outputs, strict=True) if proc.returncode)
    assert refused.startswith("kit: error: ") and str(tmp_path / "out") in refused
    assert "Traceback" not in refused and "--debug" not in refused
    gate.touch()
    assert kit.attach(tmp_path / "out").result(timeout=120).stats.ok == 50


@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_thread_forward_left_running_does_not_keep_kit_alive(
    command: str, config: Path, tmp_path: Path
) -> None:
    """Issue 25, 14: the run is over, its results stored; the process ends, saying why."""
    program = [sys.executable, "-m", "kit", command, str(config), "parallel.env=inline"]
    leaves = "runner._target_=tests.workloads.LeavesAThread"
    ran = subprocess.run(
        [*program, leaves], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert ran.returncode == 0, ran.stderr
    outcome = kit.attach(tmp_path / "out").result(timeout=120)
    assert outcome.stats.ok == 50
    if command == "run":
        assert "not waiting for 1 thread(s) it left running ('stray-poller')" in ran.stderr
    else:  # the driver, a process of its own, ended too
        driver = json.loads((tmp_path / "out" / "driver.json").read_text())
        assert not outliving([driver["pid"]], 60), "the driver outlived its run"


def test_the_scale_out_command_replays_a_notebook_edit(config: Path, tmp_path: Path) -> None:
    # In the notebook: load the base config, edit it, then scale out with the override list.
    base = kit.load_config(config)
    edited = kit.load_config(base, ["factor=5", "+offset2=3", "parallel.env=inline"])
    overrides = kit.config.to_overrides(base, edited)
    assert overrides == ["factor=5", "parallel.env=inline", "+offset2=3"]
    result = kit_cli("run", str(config), *overrides)
    assert result.returncode == 0, result.stderr
    stored = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert stored["config_hash"] == kit.config.config_hash(edited)


def test_status_of_a_folder_without_a_run_exits_2(tmp_path: Path) -> None:
    result = kit_cli("status", str(tmp_path))
    assert result.returncode == 2
    assert "holds no Kit run" in result.stderr


def test_an_address_that_is_not_one_exits_2_at_once(config: Path) -> None:
    result = kit_cli("run", str(config), "parallel.env=remote", "+parallel.address=not-a-url")
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "kit: error: parallel.address: 'not-a-url' is not a scheduler address "
        "(missing port number in address 'not-a-url')"
    ) in result.stderr
    assert "Traceback" not in result.stderr


def test_a_scheduler_nobody_listens_at_is_an_explained_failure_not_a_traceback(
    config: Path,
) -> None:
    port = free_port()  # free a moment ago, and no listener gets it from the kernel meanwhile
    address = f"tcp://127.0.0.1:{port}"
    args = ("run", str(config), "parallel.env=remote", f"+parallel.address={address}")
    result = kit_cli(*args, "+parallel.options.timeout=2")
    assert result.returncode == 1, result.stdout + result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kit: error: cannot connect to the scheduler at {address}: "), last
    assert last.endswith("; check the address and that the scheduler runs"), last
    assert "Traceback" not in result.stderr and "--debug" not in result.stderr


def test_an_unexpected_error_is_one_line_unless_debug(config: Path) -> None:
    args = ("run", str(config), "parallel.env=inline", "runner._target_=tests.workloads.BadSummary")
    result = kit_cli(*args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "kit: error: RuntimeError: the summary broke (`kit --debug ...` shows the traceback)"
    )
    assert "Traceback" not in result.stderr
    debug = kit_cli("--debug", *args)
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == "RuntimeError: the summary broke"


def interrupted(*args: str, once: Path, group: bool = False) -> tuple[int, str, str]:
    """Run ``kit ARGS``; once ``once`` exists, Ctrl-C it (its whole group, as a terminal does)."""
    import os
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "kit", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=group,  # a group of its own, as a terminal's foreground job
    )
    deadline = time.monotonic() + 120
    while not once.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def test_ctrl_c_ends_kit_run_with_a_message_not_a_traceback(config: Path, tmp_path: Path) -> None:
    args = ("run", str(config), "parallel.env=inline", "+sleep=0.2")
    code, _, err = interrupted(*args, once=tmp_path / "out" / "ledger.jsonl")
    assert code == 1, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "completed chunks are kept" in err


def test_ctrl_c_in_a_terminal_ends_kit_sweep_on_workers_with_one_line(
    config: Path, tmp_path: Path
) -> None:
    # A terminal's Ctrl-C goes to the whole process group: each local worker printed a
    # KeyboardInterrupt traceback of its own, four for two workers.
    args = ("sweep", str(config), "+sleep=0.2", "factor=2,3")
    first = tmp_path / "out" / "trial-000" / "ledger.jsonl"
    code, out, err = interrupted(*args, once=first, group=True)
    assert code == 1, err
    assert "Traceback" not in err + out and "KeyboardInterrupt" not in err + out
    assert err.count("kit: interrupted; completed chunks are kept") == 1, err


def test_terminal_escapes_from_items_are_printed_escaped(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = tmp_path / "job.yaml"
    config.write_text(
        CONFIG.replace("tests.workloads.Affine", "tests.workloads.Escapes")
        .replace("stop: 50", "stop: 3")
        .replace("env: local", "env: inline")
        .format(out=out)
    )
    ran = kit_cli("run", str(config))
    # What a detached driver (or anyone who can write the folder) leaves in status.json.
    status = json.loads((out / "status.json").read_text()) if (out / "status.json").exists() else {}
    status.update(state="running\x1b[2J", recent_failures=[[1, "\x1b]0;pwned\x07"]])
    (out / "status.json").write_text(json.dumps(status))
    shown = kit_cli("status", str(out))
    for printed in (ran.stdout, ran.stderr, shown.stdout, shown.stderr):
        assert not any(c in printed for c in "\x1b\x07\x9b"), printed
    assert "\\x1b]0;pwned\\x07\\x1b[31mred\\x9b2J" in ran.stdout
    assert "failed:  item 1: \\x1b]0;pwned\\x07" in shown.stdout


@pytest.mark.parametrize(
    "garbled",
    [
        {"state": ["x"], "done": "many", "total": None, "failed": -3},
        {"session": "local", "recent_failures": [[1]], "items_per_second": "fast"},
        {"session": {"parallel": "local"}, "recent_failures": "none"},
        {"state": "running", "done": 5, "total": 4, "failed": 0},  # once "5/4 (125%)"
    ],
)
def test_kit_status_reads_a_garbled_status_file(tmp_path: Path, garbled: dict) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "status.json").write_text(json.dumps(garbled))
    (out / "manifest.json").write_text("{}")
    shown = kit_cli("status", str(out))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"{out}: ")
    assert "(125%)" not in shown.stdout
    if garbled.get("total") == 4:
        assert "5 done and 0 failed of 4, which no run writes" in shown.stdout, shown.stdout


SWEEP = """\
provider:
  _target_: tests.workloads.KeyedProvider
runner:
  _target_: tests.workloads.Shifted
items:
  start: 0
  stop: 6
factor: 2
offset: 0
log_dir: {log}
parallel:
  env: inline
"""


def test_kit_sweep_runs_each_trial_prints_each_end_and_a_table(tmp_path: Path) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(SWEEP.format(log=tmp_path))
    out = tmp_path / "beams"
    done = kit_cli("sweep", str(config), "offset=0,5", "items.stop=4", "-o", str(out))
    assert done.returncode == 0, done.stderr
    # Said at once: a long trial's end may be minutes away.
    assert done.stderr.splitlines()[0] == (
        f"sweep of 2 trial(s), up to 2 at once, into {out}: a line as each trial ends "
        f"(`kit status {out}` from another terminal)"
    )
    lines = done.stdout.splitlines()
    ends = sorted(line for line in lines if line.startswith("trial-") and ": " in line)
    assert ends[0].startswith("trial-000 offset=0 items.stop=4: completed, 4 ok, 0 failed in ")
    assert ends[1].startswith("trial-001 offset=5 items.stop=4: completed, 4 ok, 0 failed in ")
    header = next(line for line in lines if line.startswith("trial "))
    assert header.split()[:5] == ["trial", "offset", "status", "ok", "failed"]
    assert lines[-1] == f"results: {out}"
    assert kit.attach(out / "trial-001").result(timeout=60).records[1]["y"] == 7
    # Hydra's flag on `kit run` does the same; the same sweep again reads the trials back.
    again = kit_cli("run", "-m", str(config), "offset=0,5", "items.stop=4", "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "setup.log").read_text().count("\n") == 1  # one env, both trials


def test_kit_run_with_a_sweep_points_to_kit_sweep(tmp_path: Path) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(SWEEP.format(log=tmp_path))
    done = kit_cli("run", str(config), "offset=0,5")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kit: error: override 'offset=0,5' is a sweep: run its trials with "
        "`kit sweep CONFIG ...` (or `kit run -m CONFIG ...`), or give one value"
    )


def test_kit_sweep_with_a_metric_shows_each_trial_against_the_best(tmp_path: Path) -> None:
    config = tmp_path / "poly.yaml"
    config.write_text(
        "provider: {_target_: kit.examples.quickstart.ModelProvider}\n"
        "runner: {_target_: kit.examples.quickstart.Evaluate}\n"
        "model: {coefficients: [0.0, 1.0], work_seconds: 0.0}\n"
        "items: {start: 0, stop: 20}\nparallel: {env: inline}\n"
    )
    done = kit_cli(
        "sweep",
        str(config),
        "model.coefficients=[0,1],[0,2]",
        "-o",
        str(tmp_path / "s"),
        "--metric",
        "max_y",
        "--maximize",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("trial "))
    assert "max_y vs best" in header
    assert "best: trial-001 model.coefficients=[0,2]: 3.8" in lines


def test_kit_sweep_search_asks_optuna_for_the_trials_and_resumes_the_study(
    tmp_path: Path,
) -> None:
    config = tmp_path / "poly.yaml"
    config.write_text(
        "provider: {_target_: kit.examples.quickstart.ModelProvider}\n"
        "runner: {_target_: kit.examples.quickstart.Evaluate}\n"
        "model: {coefficients: [0.0, 1.0], work_seconds: 0.0}\n"
        "items: {start: 0, stop: 20}\nparallel: {env: inline}\n"
    )
    search = [
        "sweep", str(config), "items.stop=int(interval(2,20))", "-o", str(tmp_path / "s"),
        "--search", "optuna", "--metric", "max_y", "--direction", "maximize", "--prune", "median",
    ]  # fmt: skip
    done = kit_cli(*search, "--trials", "3")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("search of 3 trial(s), up to ")
    lines = done.stdout.splitlines()
    assert len([line for line in lines if line.startswith("trial-0") and ": " in line]) == 3
    assert any(line.startswith("best: trial-") for line in lines)
    assert "optuna" not in done.stderr.lower()  # Optuna's own log lines stay out of the way
    more = kit_cli(*search, "--trials", "5")  # the same search, further: two more trials
    assert more.returncode == 0, more.stderr
    ends = [
        line for line in more.stdout.splitlines() if line.startswith("trial-0") and ": " in line
    ]
    assert sorted(line.split()[0] for line in ends) == ["trial-003", "trial-004"]
    refused = kit_cli(*search[:-2], "--direction", "minimize", "--trials", "5")
    assert refused.returncode == 2
    assert "holds a search with direction 'maximize', not 'minimize'" in refused.stderr
    bare = kit_cli(*search[:7])  # no --metric, no --trials
    assert bare.returncode == 2
    assert "--search optuna needs --trials N and --metric NAME" in bare.stderr


SLOW_POLY = (
    "provider: {_target_: kit.examples.quickstart.ModelProvider}\n"
    "runner: {_target_: kit.examples.quickstart.Evaluate, chunk_size: 2}\n"
    "model: {coefficients: [0.0, 1.0], work_seconds: 0.02}\n"
    "items: {start: 0, stop: 200}\nparallel: {env: inline}\n"
)


def a_trial_runs(folder: Path) -> bool:
    path = folder / "sweep.json"
    if not path.exists():
        return False
    trials = json.loads(path.read_text())["trials"]
    return any(t["status"] == "running" for t in trials) and any(
        (folder / t["name"] / "ledger.jsonl").exists() for t in trials
    )


#: A sweep whose trials hold at item 100 of 200 until the test opens the gate (a file):
#: however long `kit status` and `kit cancel` take to start on a busy machine, the
#: cancel finds them running. On a worker: an item held in the driver's own thread
#: could not be stopped by a cancel.
GATED = """\
provider: {{_target_: tests.workloads.ToyProvider}}
runner: {{_target_: tests.workloads.Affine, chunk_size: 10}}
factor: 1
offset: 0
gate: {gate}
gate_from: 100
items: {{start: 0, stop: 200}}
parallel: {{env: local, n_workers: 1}}
"""


def test_a_submitted_sweep_is_watched_cancelled_resumed_and_read_with_attach(
    tmp_path: Path,
) -> None:
    config, gate = tmp_path / "gated.yaml", tmp_path / "gate"
    config.write_text(GATED.format(gate=gate))
    folder = tmp_path / "s"
    grid = ["submit", str(config), "factor=1,2,3", "-o", str(folder)]
    done = kit_cli(*grid, "--concurrency", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"submitted a sweep of 3 trials: output {folder}"
    deadline = time.monotonic() + 120
    while not a_trial_runs(folder):
        assert time.monotonic() < deadline, (folder / "driver.log").read_text()
        time.sleep(0.05)
    status = kit_cli("status", str(folder))
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[0].startswith(f"{folder}: sweep running, ")
    assert "trial-002  factor=3  " in status.stdout
    sweep = kit.attach(folder)
    assert not sweep.done()
    cancelled = kit_cli("cancel", str(folder))
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.startswith(f"{folder}: cancelled (")
    assert "trials done" in cancelled.stdout and "run it again to resume" in cancelled.stdout
    assert sweep.done()
    stopped = sweep.result(timeout=10)
    assert "cancelled" in [row["status"] for row in stopped.rows()]
    kept = {
        t.name: r.stats.ok
        for t, r in zip(stopped.trials, stopped.results, strict=True)
        if r is not None
    }
    assert 0 < sum(kept.values()) <= 200, kept  # the two running trials, held at item 100
    # The same submit again, the gate open, resumes: nothing done is done twice.
    gate.touch()
    again = kit_cli(*grid, "--concurrency", "2")
    assert again.returncode == 0, again.stderr
    result = kit.attach(folder).result(timeout=240)
    assert [row["status"] for row in result.rows()] == ["completed"] * 3, result.errors
    for trial, run in zip(result.trials, result.results, strict=True):
        assert run is not None and run.stats.ok == 200
        assert run.stats.resumed == kept.get(trial.name, 0)
    assert "kit: interrupted" in (folder / "driver.log").read_text()


def test_a_submitted_search_keeps_its_study_and_attach_reads_it(tmp_path: Path) -> None:
    config = tmp_path / "poly.yaml"
    config.write_text(SLOW_POLY.replace("stop: 200", "stop: 10").replace("0.02", "0.0"))
    folder = tmp_path / "s"
    done = kit_cli(
        "submit", str(config), "items.stop=int(interval(2,10))", "-o", str(folder),
        "--search", "optuna", "--trials", "3", "--metric", "max_y", "--direction", "maximize",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = kit.attach(folder).result(timeout=240)
    assert [row["status"] for row in result.rows()] == ["completed"] * 3
    study = kit.attach(folder).study
    assert len(study.trials) == 3 and study.direction.name == "MAXIMIZE"
    assert study.best_value == max(r.summary["max_y"] for r in result.results)


def test_a_sweep_a_notebook_drives_is_not_cancelled_from_outside(tmp_path: Path) -> None:
    config = tmp_path / "poly.yaml"
    config.write_text(SLOW_POLY)
    folder = tmp_path / "s"
    handle = kit.submit_sweep(str(config), ["model.coefficients=[0,1],[0,2]"], output_dir=folder)
    try:
        refused = kit_cli("cancel", str(folder))
        assert refused.returncode == 2
        assert f"is driven by process {os.getpid()}, not by a detached driver" in refused.stderr
    finally:
        handle.cancel()
        handle.result(timeout=60)
    (folder / "sweep.json").write_text(
        json.dumps({"trials": [{"name": "../elsewhere", "overrides": [], "status": "completed"}]})
    )
    with pytest.raises(kit.KitError, match=r"trial 0 is named '\.\./elsewhere', not 'trial-000'"):
        kit.attach(folder)
