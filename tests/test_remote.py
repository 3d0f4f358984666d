"""A real remote cluster started with the `dask scheduler` and `dask worker` programs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client

import kit
from tests.servers import dask_cluster
from tests.workloads import Affine, ToyProvider, WhereRan, expected, lines, reads_back, toy_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A scheduler and two single-thread workers on 127.0.0.1; yields the address."""
    with dask_cluster(tmp_path_factory.mktemp("remote")) as address:
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address


def test_a_remote_cluster_gives_the_same_records(remote: str, tmp_path: Path) -> None:
    parallel = {"env": "remote", "address": remote}
    result = Affine(ToyProvider(toy_config(tmp_path)), parallel=parallel).run(range(300))
    assert result.records == expected(range(300))
    assert len(result.stats.workers) == 2
    builds = lines(tmp_path, "setup.log")
    assert len(builds) == 2 and str(os.getpid()) not in {b.split()[0] for b in builds}


def test_envs_are_built_on_the_remote_workers(remote: str, tmp_path: Path) -> None:
    parallel = {"env": "remote", "address": remote}
    records = WhereRan(ToyProvider(toy_config(tmp_path)), parallel=parallel).run(range(50)).records
    assert {r["pid"] for r in records} <= {int(b.split()[0]) for b in lines(tmp_path, "setup.log")}


def test_shutdown_leaves_a_remote_cluster_running(remote: str) -> None:
    session = kit.get_session({"env": "remote", "address": remote})
    assert session.cluster is None
    session.close()
    with Client(remote, timeout=10) as client:
        assert len(client.scheduler_info()["workers"]) == 2


def test_a_remote_session_without_address_is_a_config_error() -> None:
    with pytest.raises(kit.ConfigError, match="env 'remote' needs the scheduler address"):
        kit.get_session({"env": "remote"})


NOTEBOOK = textwrap.dedent(
    """
    # Classes defined in __main__, as in a notebook cell.
    import json, sys
    import kit
    from omegaconf import OmegaConf

    class Offset(kit.EnvironmentProvider):
        def build_env_local(self):
            return {"offset": self.config.offset}
        def make_worker_setup_fn(self):
            offset = self.config.offset
            return lambda: {"offset": offset}

    class AddOffset(kit.Runner):
        @staticmethod
        def forward(idx, offset):
            return idx + offset

    parallel = json.loads(sys.argv[1])
    runner = AddOffset(Offset(OmegaConf.create({"offset": 100})), parallel=parallel)
    print(json.dumps(runner.run(range(20)).records))
    handle = runner.submit(range(5))
    print(json.dumps(handle.result(timeout=60).records))
    """
)


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_classes_defined_in_main_run_on_a_cluster(mode: str, remote: str, tmp_path: Path) -> None:
    parallel = (
        {"env": "local", "n_workers": 2}
        if mode == "local"
        else {"env": "remote", "address": remote}
    )
    # `python -c` from an empty folder, like a notebook kernel: there is no
    # module file, so the classes can only reach the workers by value.
    result = subprocess.run(
        [sys.executable, "-c", NOTEBOOK, json.dumps(parallel)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    first, second = result.stdout.splitlines()[:2]
    assert json.loads(first) == [i + 100 for i in range(20)]
    assert json.loads(second) == [i + 100 for i in range(5)]


def test_a_killed_scheduler_ends_the_run_and_a_resume_finishes_it(tmp_path: Path) -> None:
    import signal

    import psutil

    from kit._base.errors import SchedulerLostError
    from kit.events import ChunkFinished

    out = tmp_path / "run"
    config = toy_config(sleep=0.2)
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
    with dask_cluster(tmp_path / "first") as address:
        scheduler = next(
            p
            for p in psutil.process_iter(["cmdline"])
            if "scheduler" in (p.info["cmdline"] or [])
            and str(tmp_path / "first" / "scheduler.json") in (p.info["cmdline"] or [])
        )
        parallel = {"env": "remote", "address": address, "startup_timeout": 5}
        runner = Affine(ToyProvider(config), parallel=parallel, output_dir=out, chunk_size=2)

        def kill_the_scheduler(event: object) -> None:
            if isinstance(event, ChunkFinished) and event.done >= 4 and scheduler.is_running():
                scheduler.send_signal(signal.SIGKILL)

        handle = runner.submit(range(60), on_event=kill_the_scheduler)
        with pytest.raises(SchedulerLostError) as info:
            handle.result(timeout=120)
        handle.cancel()  # a no-op now, not distributed's ClosedClientError
    assert str(info.value).startswith(f"the scheduler at {address} went away during the run")
    kept = kit.attach(out).snapshot().done
    assert kept >= 4
    with dask_cluster(tmp_path / "second") as address:
        parallel = {"env": "remote", "address": address}
        again = Affine(ToyProvider(config), parallel=parallel, output_dir=out, chunk_size=2)
        result = again.run(range(60))
    assert result.records == expected(range(60)) and result.stats.resumed == kept
    reads_back(result, out)
