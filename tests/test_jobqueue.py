"""Job-queue clusters: a real single-node SLURM (started by make test), job scripts for the rest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.cluster._builders import JOB_QUEUES, job_script
from kit.config import parallel_section
from tests.slurm import slurm_parallel
from tests.workloads import Affine, ToyProvider, expected, lines, toy_config

ROOT = Path(__file__).resolve().parents[1]


def allowed_failures(dask_scheduler: Any) -> int:
    return int(dask_scheduler.allowed_failures)


@pytest.mark.slow
def test_a_job_runs_end_to_end_through_sbatch(
    slurm: None, tmp_path: Path, closing: list[dict[str, Any]]
) -> None:
    wrapper = tmp_path / "sbatch-wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/wrapper.log\nexec sbatch "$@"\n')
    wrapper.chmod(0o755)
    parallel = slurm_parallel(tmp_path, submit_command=str(wrapper))
    closing.append(parallel)
    # Both jobs in before the run starts, or trivial items may all land on the first.
    session = kit.get_session(parallel)
    session.wait_for_workers(2)
    assert session.client.run_on_scheduler(allowed_failures) == 0
    result = Affine(ToyProvider(toy_config(tmp_path)), parallel=parallel).run(range(200))
    assert result.records == expected(range(200))
    assert len(result.stats.workers) == 2
    builds = [line.split() for line in lines(tmp_path, "setup.log")]
    assert len(builds) == 2
    assert all(job != "-" for _, _, job in builds), "the env was not built inside SLURM jobs"
    assert len({job for _, _, job in builds}) == 2
    submitted = lines(tmp_path, "wrapper.log")
    assert len(submitted) == 2 and all(line.endswith(".sh") for line in submitted)


def test_a_refused_job_is_reported_at_once_with_the_queue_output(
    tmp_path: Path, closing: list[dict[str, Any]]
) -> None:
    import time

    refusing = tmp_path / "sbatch-refuses.sh"
    refusing.write_text(
        '#!/bin/sh\necho "sbatch: error: invalid partition specified: nope" >&2\nexit 1\n'
    )
    refusing.chmod(0o755)
    parallel = slurm_parallel(tmp_path, submit_command=str(refusing), startup_timeout=300)
    closing.append(parallel)
    began = time.monotonic()
    with pytest.raises(kit.errors.ClusterError) as info:
        Affine(ToyProvider(toy_config()), parallel=parallel).run(range(5))
    assert time.monotonic() - began < 120, "waited for the startup timeout"
    message = str(info.value)
    assert message.startswith("the job queue refused the worker job: ")
    assert "sbatch: error: invalid partition specified: nope" in message
    assert "check parallel.submit_command" in message


@pytest.mark.slow
def test_waiting_for_workers_says_why_the_jobs_have_not_started(
    slurm: None, tmp_path: Path, closing: list[dict[str, Any]]
) -> None:
    parallel = slurm_parallel(tmp_path, n_workers=1, startup_timeout=3)
    parallel["options"]["job_extra_directives"] = ["--begin=now+3600"]
    closing.append(parallel)
    with pytest.raises(kit.errors.NoWorkersError) as info:
        kit.get_session(parallel).wait_for_workers(1)
    message = str(info.value)
    assert message.startswith("no worker joined the cluster within 3 s (parallel.startup_timeout)")
    assert "PENDING (BeginTime)" in message, message


@pytest.mark.slow
def test_the_python_submit_hook_is_used(
    slurm: None, tmp_path: Path, closing: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import jobqueue_hooks

    monkeypatch.setattr(jobqueue_hooks, "LOG", tmp_path / "hook.log")
    parallel = slurm_parallel(tmp_path, n_workers=1)
    closing.append(parallel)
    kit.get_session(parallel, submit_hook=jobqueue_hooks.record_and_submit)
    result = Affine(ToyProvider(toy_config(tmp_path)), parallel=parallel).run(range(20))
    assert result.records == expected(range(20))
    (line,) = lines(tmp_path, "hook.log")
    assert line.startswith("sbatch ") and line.endswith(".sh")


@pytest.mark.slow
def test_the_submit_hook_can_be_named_in_the_config(
    slurm: None, tmp_path: Path, closing: list[dict[str, Any]]
) -> None:
    parallel = slurm_parallel(
        tmp_path, n_workers=1, submit_hook="tests.jobqueue_hooks.record_and_submit"
    )
    closing.append(parallel)
    os.environ["KIT_TEST_HOOK_LOG"] = str(tmp_path / "hook.log")
    import importlib

    from tests import jobqueue_hooks

    importlib.reload(jobqueue_hooks)
    try:
        Affine(ToyProvider(toy_config(tmp_path)), parallel=parallel).run(range(5))
    finally:
        del os.environ["KIT_TEST_HOOK_LOG"]
        importlib.reload(jobqueue_hooks)
    assert len(lines(tmp_path, "hook.log")) == 1


def test_a_bad_submit_hook_path_is_a_config_error(tmp_path: Path) -> None:
    from kit.cluster._builders import resolve_hook

    with pytest.raises(
        kit.ConfigError, match=r"parallel\.submit_hook: cannot import 'nowhere\.hook'"
    ):
        resolve_hook("nowhere.hook")


@pytest.mark.parametrize(
    ("env", "directive"),
    [
        ("slurm", "#SBATCH"),
        ("pbs", "#PBS"),
        ("sge", "#$"),
        ("lsf", "#BSUB"),
        ("moab", "#PBS"),
        ("oar", "#OAR"),
    ],
)
def test_job_scripts_for_every_queue(env: str, directive: str) -> None:
    options = {"cores": 1, "memory": "2GB", "scheduler_options": {"host": "127.0.0.1"}}
    script = job_script(parallel_section({"env": env, "options": options}))
    assert directive in script
    assert "distributed.cli.dask_worker" in script


def test_htcondor_job_script() -> None:
    options = {
        "cores": 1,
        "memory": "2GB",
        "disk": "1GB",
        "scheduler_options": {"host": "127.0.0.1"},
    }
    script = job_script(parallel_section({"env": "htcondor", "options": options}))
    assert "distributed.cli.dask_worker" in script


def test_a_site_section_named_by_config_name_gives_the_job_its_resources() -> None:
    import dask.config

    # dask-jobqueue reads cores and memory from jobqueue.<config_name>; so does Kit's check.
    # A site's section is a whole copy of the queue's, with its own values.
    import kit.cluster._builders

    kit.cluster._builders.import_dask_jobqueue()  # its defaults are in dask's config once imported
    section = {**dask.config.get("jobqueue.slurm"), "cores": 3, "memory": "6GB", "queue": "gpu"}
    site = {"jobqueue.slurm-gpu": section}
    options = {"config_name": "slurm-gpu", "scheduler_options": {"host": "127.0.0.1"}}
    with dask.config.set(site):
        script = job_script(parallel_section({"env": "slurm", "options": options}))
    assert "#SBATCH -p gpu" in script and "#SBATCH --cpus-per-task=3" in script


def test_every_job_queue_env_is_covered() -> None:
    assert set(JOB_QUEUES) == {"slurm", "pbs", "sge", "lsf", "htcondor", "moab", "oar"}


def cluster_script(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `kit cluster script ARGS` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "kit", "cluster", "script", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_kit_cluster_script_prints_the_job_script(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "parallel:\n  env: slurm\n  n_workers: 2\n  options:\n    cores: 2\n    memory: 4GB\n"
        "    queue: gpu\n    scheduler_options: {host: 127.0.0.1}\n"
    )
    result = cluster_script(str(config), "parallel.options.queue=cpu")
    assert result.returncode == 0, result.stderr
    assert "#SBATCH -p cpu" in result.stdout
    assert "#SBATCH --cpus-per-task=2" in result.stdout


def test_kit_cluster_script_refuses_a_local_env(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("parallel:\n  env: local\n")
    result = cluster_script(str(config))
    assert result.returncode == 2
    assert "parallel.env: 'local' submits no job script" in result.stderr


def test_kit_cluster_script_names_the_missing_job_resources(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("parallel:\n  env: slurm\n  options:\n    memory: 4GB\n")
    result = cluster_script(str(config))
    assert result.returncode == 2, result.stderr
    assert "parallel.options.cores: a slurm job needs parallel.options.cores" in result.stderr
    assert "+parallel.options.cores=1" in result.stderr
    assert "Traceback" not in result.stderr and "dask_jobqueue" not in result.stderr


def test_without_dask_jobqueue_the_error_names_the_extra() -> None:
    script = (
        "import sys\n"
        "sys.modules['dask_jobqueue'] = None\n"
        "from kit.cluster._builders import job_queue_cluster\n"
        "from kit.config import parallel_section\n"
        "try:\n"
        "    job_queue_cluster(parallel_section({'env': 'pbs'}))\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "parallel.env: 'pbs' needs dask-jobqueue; install it with `pip install 'kit-lab[jobqueue]'`"
        " (or `pip install dask-jobqueue`)"
    )


@pytest.mark.slow
def test_rl_collection_runs_on_slurm_as_inline(
    slurm: None, tmp_path: Path, closing: list[dict[str, Any]]
) -> None:
    from kit.rl import DistributedCollector
    from tests.rl.envs import CountProvider, random_policy, trajectory

    provider = CountProvider({"num_envs": 2, "count": {"length_mod": 6}})
    inline = DistributedCollector(provider, random_policy, seed=1)
    inline.set_weights(None, 0)
    parallel = slurm_parallel(tmp_path)
    closing.append(parallel)
    on_slurm = DistributedCollector(provider, random_policy, parallel=parallel, seed=1)
    on_slurm.set_weights({"w": [1.0, 2.0]}, 1)
    episodes = on_slurm.collect(8)
    assert [trajectory(e) for e in episodes] == [trajectory(e) for e in inline.collect(8)]
    assert {v for e in episodes for v in e.policy_versions} == {1}
    assert "driver" not in {e.worker for e in episodes}


@pytest.mark.slow
def test_job_output_files_land_in_the_runs_output_directory(
    slurm: None, tmp_path: Path, closing: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook_folder = tmp_path / "notebooks"
    notebook_folder.mkdir()
    monkeypatch.chdir(notebook_folder)  # where sbatch writes slurm-N.out when told nothing
    parallel = slurm_parallel(tmp_path, n_workers=1)
    del parallel["options"]["log_directory"]
    closing.append(parallel)
    out = tmp_path / "run"
    runner = Affine(ToyProvider(toy_config(tmp_path)), parallel=parallel, output_dir=out)
    assert runner.run(range(10)).records == expected(range(10))
    session = kit.get_session(parallel)
    assert session.job_logs == str(out / "job-logs")
    assert session.describe()["job_logs"] == session.job_logs
    logs = sorted(p.name for p in (out / "job-logs").iterdir())
    assert logs and all(name.endswith((".out", ".err")) for name in logs), logs
    assert list(notebook_folder.iterdir()) == []


def test_where_job_output_files_go_when_no_run_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dask.config

    from kit.cluster._builders import job_log_directory

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    section = parallel_section({"env": "slurm", "options": {"cores": 1}})
    fallback = job_log_directory(section)
    assert fallback.startswith(str(tmp_path / "cache" / "kit" / "job-logs"))
    assert job_log_directory(section, str(tmp_path / "run" / "job-logs")) == str(
        tmp_path / "run" / "job-logs"
    )
    with dask.config.set({"jobqueue.slurm.log_directory": "/site/logs"}):
        assert job_log_directory(section, str(tmp_path / "run")) == "/site/logs"
    given = parallel_section({"env": "slurm", "options": {"log_directory": "mine"}})
    assert job_log_directory(given, str(tmp_path / "run")) == "mine"
