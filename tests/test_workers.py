"""Provider envs on real Dask workers: built once, reused, rebuilt, torn down, failures."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dask.config
import pytest

import kit
from kit.cluster._plugin import scheduler_state
from kit.errors import ProviderSetupError
from tests.workloads import (
    Affine,
    KeyedProvider,
    NewNameProvider,
    Peeking,
    Shifted,
    ToyProvider,
    WhereRan,
    lines,
    sampling,
    toy_config,
)

ROOT = Path(__file__).resolve().parents[1]


def pids(log_dir: Path, name: str = "setup.log") -> list[str]:
    return [line.split()[0] for line in lines(log_dir, name)]


def test_each_worker_builds_the_env_once_across_three_runs(tmp_path: Path, local: dict) -> None:
    runner = WhereRan(ToyProvider(toy_config(tmp_path)), parallel=local)
    seen: set[int] = set()
    for _ in range(3):
        result = runner.run(range(200))
        seen |= {r["pid"] for r in result.records}
        assert all(r["pid"] == r["env_pid"] for r in result.records)
    builds = pids(tmp_path)
    assert len(builds) == 2 == len(set(builds))
    assert {int(p) for p in builds} == seen


def test_a_new_runner_with_the_same_config_reuses_the_env(tmp_path: Path, local: dict) -> None:
    for _ in range(2):
        WhereRan(ToyProvider(toy_config(tmp_path)), parallel=local).run(range(10))
    assert len(pids(tmp_path)) == 2


def test_envs_alternating_within_max_envs_never_rebuild_and_the_least_recent_goes_first(
    tmp_path: Path, local: dict
) -> None:
    def run(factor: int) -> Any:
        return Affine(ToyProvider(toy_config(tmp_path, factor=factor)), parallel=local).run(
            range(10)
        )

    for factor in (2, 5, 2, 5, 2):  # two configs, parallel.max_envs = 2: both stay
        assert run(factor).records[3] == {"idx": 3, "y": 3 * factor + 1}
    factors = sorted(line.split()[1] for line in lines(tmp_path, "setup.log"))
    assert factors == ["2", "2", "5", "5"]
    assert lines(tmp_path, "teardown.log") == []
    assert run(7).records[3] == {"idx": 3, "y": 22}  # a third: 5, used least recently, goes
    deadline = time.monotonic() + 10
    while len(lines(tmp_path, "teardown.log")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(line.split()[1] for line in lines(tmp_path, "teardown.log")) == ["5", "5"]
    assert run(2).records[3] == {"idx": 3, "y": 7}
    assert sorted(line.split()[1] for line in lines(tmp_path, "setup.log")).count("2") == 2


def test_runs_differing_outside_env_keys_share_one_env_per_worker(
    tmp_path: Path, local: dict
) -> None:
    for offset in (0, 3, 8):
        provider = KeyedProvider(toy_config(tmp_path, factor=2, offset=offset))
        result = Shifted(provider, parallel=local).run(range(20))
        assert [r["y"] for r in result.records] == [2 * i + offset for i in range(20)]
    assert len(pids(tmp_path)) == 2 == len(set(pids(tmp_path)))


def test_reading_a_key_outside_env_keys_on_a_worker_is_the_named_error(
    tmp_path: Path, local: dict
) -> None:
    with pytest.raises(kit.ConfigError) as info:
        Affine(Peeking(toy_config(tmp_path, factor=2, offset=5)), parallel=local).run(range(4))
    assert str(info.value).startswith(
        "offset: Peeking read a config key outside its env_keys while building its env"
    )


def test_a_failing_setup_fails_at_once_and_leaves_nothing_registered(
    tmp_path: Path, local: dict, local_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    provider = ToyProvider(toy_config(tmp_path, fail_setup=True))
    with pytest.raises(ProviderSetupError) as info, caplog.at_level(logging.ERROR):
        Affine(provider, parallel=local).run(range(5))
    # Kit's error alone: no scheduler traceback about a plugin it was asked to drop twice.
    assert "does not exist" not in caplog.text, caplog.text
    message = str(info.value)
    assert message.startswith("ToyProvider: building the env failed on worker ")
    assert "Traceback (most recent call last)" in message
    assert "RuntimeError: model file is corrupt" in message
    assert provider.env_name() not in local_client.run_on_scheduler(scheduler_state)["plugins"]


def test_a_setup_that_returns_no_dict_is_an_error(tmp_path: Path, local: dict) -> None:
    with pytest.raises(ProviderSetupError, match="must return a dict of env entries"):
        Affine(ToyProvider(toy_config(tmp_path, bad_setup=True)), parallel=local).run(range(5))


def test_the_newer_method_name_works_on_workers(local: dict) -> None:
    result = Affine(NewNameProvider(toy_config()), parallel=local).run(range(3))
    assert result.records == [{"idx": i, "y": 2 * i} for i in range(3)]


def test_workers_that_join_or_restart_build_the_env(tmp_path: Path) -> None:
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "join-restart"}}
    session = kit.get_session(parallel)
    try:
        runner = WhereRan(ToyProvider(toy_config(tmp_path)), parallel=parallel)
        runner.run(range(5))
        assert len(pids(tmp_path)) == 1
        session.cluster.scale(2)
        session.client.wait_for_workers(2, timeout=60)
        result = runner.run(range(200))
        assert len(set(pids(tmp_path))) == 2
        assert all(r["pid"] == r["env_pid"] for r in result.records)
        session.client.restart()
        result = runner.run(range(50))
        assert all(r["pid"] == r["env_pid"] for r in result.records)
        # A restarted worker counts as back once registered and builds its env
        # just after; the run need not wait for it (the other worker may take
        # all 50 items), so its build can land after the run has ended.
        deadline = time.monotonic() + 60
        while len(set(pids(tmp_path))) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(set(pids(tmp_path))) == 4
    finally:
        session.close()
    assert session not in kit.cluster.sessions()


def test_sessions_are_reused_and_listed(local: dict) -> None:
    first = kit.get_session(local)
    assert kit.get_session(dict(local)) is first
    assert first in kit.cluster.sessions()
    assert first.describe()["workers"] == 2
    assert first.dashboard_link is None or first.dashboard_link.startswith("http://127.0.0.1:")


def test_dashboards_listen_on_localhost_by_default(local: dict) -> None:
    session = kit.get_session(local)
    assert session.client.scheduler.address.startswith("tls://127.0.0.1:")
    if session.dashboard_link is not None:  # bokeh installed
        assert session.dashboard_link.startswith("http://127.0.0.1:")


def test_job_queue_dashboards_listen_on_localhost_unless_told(tmp_path: Path) -> None:
    pytest.importorskip("dask_jobqueue")
    from kit.cluster._builders import job_queue_cluster
    from kit.config import parallel_section

    options = {"cores": 1, "memory": "1GB", "scheduler_options": {"host": "127.0.0.1"}}
    cluster = job_queue_cluster(parallel_section({"env": "slurm", "options": options}))
    try:
        assert cluster.scheduler_spec["options"]["dashboard_address"] == "127.0.0.1:0"
    finally:
        cluster.close()
    options["scheduler_options"]["dashboard_address"] = ":8790"
    cluster = job_queue_cluster(parallel_section({"env": "slurm", "options": options}))
    try:
        assert cluster.scheduler_spec["options"]["dashboard_address"] == ":8790"
    finally:
        cluster.close()


@pytest.mark.parametrize(("given", "seen"), [(None, "[None]"), ("131072", "['131072']")])
def test_local_workers_keep_glibcs_malloc_defaults_unless_told(
    tmp_path: Path, given: str | None, seen: str
) -> None:
    # Dask's nanny would start them with MALLOC_TRIM_THRESHOLD_=65536 (see kit/cluster/_nanny.py);
    # one set in the environment is the user's choice. A fresh process: the test
    # process's environment may hold the one a plain LocalCluster's nanny left there.
    script = (
        "import os\n"
        "import kit\n"
        "from tests.workloads import env_var\n"
        "if __name__ == '__main__':\n"
        "    s = kit.get_session({'env': 'local', 'n_workers': 1})\n"
        "    print(sorted(set(s.client.run(env_var, 'MALLOC_TRIM_THRESHOLD_').values())))\n"
        "    print(os.environ.get('MALLOC_TRIM_THRESHOLD_'))\n"
        "    kit.shutdown()\n"
    )
    (tmp_path / "trim.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    env["PYTHONPATH"] = str(ROOT)
    if given is not None:
        env["MALLOC_TRIM_THRESHOLD_"] = given
    out = subprocess.run(
        [sys.executable, str(tmp_path / "trim.py")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    workers, driver = out.stdout.strip().splitlines()[-2:]
    assert workers == seen
    assert driver == str(given)  # the driver's environment is left as it was


def test_local_clusters_sample_lightly_unless_told(local: dict) -> None:
    # Dask's profiler and 20 ms ticks would take CPU from the items (see kit/cluster/_nanny.py).
    client = kit.get_session(local).client
    assert set(client.run(sampling).values()) == {(False, 0.5)}
    assert client.run_on_scheduler(sampling)[1] == 0.5
    assert dask.config.get("distributed.worker.profile.enabled") is True  # the driver's own
    # A value someone set is theirs.
    with dask.config.set({"distributed.admin.tick.interval": "100ms"}):
        session = kit.get_session({**local, "n_workers": 1})
    try:
        assert set(session.client.run(sampling).values()) == {(False, 0.1)}
        assert session.client.run_on_scheduler(sampling)[1] == 0.1
    finally:
        session.close()
