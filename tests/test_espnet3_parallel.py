"""ESPnet3's ``parallel`` blocks, deployments and worker identity, as Kit runs them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

import kit
from kit import ConfigError
from kit.config import parallel_section
from tests.workloads import Affine, IndexProvider, ToyProvider, WhichWorker, expected, toy_config


@pytest.fixture
def own_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """A client the user made themselves, outside Kit."""
    # Dask's nanny writes MALLOC_TRIM_THRESHOLD_ into this process's environment;
    # put it back as it was afterwards, so later clusters of the test run do not inherit it.
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    )
    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def test_an_espnet3_local_block_loads_and_means_the_same() -> None:
    # ESPnet3's recipe shape: env, n_workers, options forwarded to the cluster class.
    block = {"env": "local", "n_workers": 2, "options": {"threads_per_worker": 1}}
    section = parallel_section(block)
    assert (section.env, section.n_workers, section.options) == ("local", 2, block["options"])
    result = Affine(ToyProvider(toy_config()), parallel=block).run(range(10))
    assert result.records == expected(range(10))


def test_a_block_with_a_key_kit_does_not_know_says_what_differs() -> None:
    with pytest.raises(ConfigError, match=r"parallel\.n_worker") as info:
        parallel_section({"env": "local", "n_worker": 2})
    assert "n_workers" in str(info.value)


@pytest.mark.parametrize(
    ("env", "package", "extra"),
    [("local_gpu", "dask-cuda", "gpu"), ("kube", "dask-kubernetes", "kube")],
)
def test_deployments_name_the_extra_to_install(env: str, package: str, extra: str) -> None:
    try:
        __import__({"local_gpu": "dask_cuda", "kube": "dask_kubernetes"}[env])
    except ImportError:
        pass
    else:
        pytest.skip(f"{package} is installed here")
    runner = Affine(ToyProvider(toy_config()), parallel={"env": env})
    with pytest.raises(ImportError, match=rf"needs {package}; .*pip install 'kit-lab\[{extra}\]'"):
        runner.run(range(2))


def test_ssh_needs_a_list_of_hosts() -> None:
    runner = Affine(ToyProvider(toy_config()), parallel={"env": "ssh", "options": {}})
    with pytest.raises(ConfigError, match=r"parallel\.options\.hosts") as info:
        runner.run(range(2))
    assert "the scheduler's first" in str(info.value)


def test_a_client_of_your_own_runs_the_work_and_stays_open(own_client: Client) -> None:
    runner = Affine(ToyProvider(toy_config()), client=own_client)
    assert runner.run(range(20)).records == expected(range(20))
    assert runner.run(range(20)).records == expected(range(20))  # the env is reused
    kit.shutdown()
    assert own_client.status == "running"
    assert own_client.submit(sum, [1, 2]).result() == 3


def test_workers_know_their_index_and_threads(own_client: Client) -> None:
    result = WhichWorker(IndexProvider({}), client=own_client).run(range(40))
    indices = {r["index"] for r in result.records}
    assert indices <= {0, 1} and indices
    assert all(r["dask_id"] == r["id"] for r in result.records)  # ESPnet3's DASK_WORKER_ID
    assert all(r["threads"] == r["nthreads"] for r in result.records)  # KIT_WORKER_THREADS


def test_a_client_must_be_a_client() -> None:
    with pytest.raises(TypeError, match=r"client must be a distributed\.Client, got str"):
        Affine(ToyProvider(toy_config()), client="tcp://127.0.0.1:8786")


def test_a_detached_run_cannot_borrow_this_process_client(
    own_client: Client, tmp_path: Path
) -> None:
    runner = Affine(ToyProvider(toy_config()), client=own_client, output_dir=tmp_path)
    with pytest.raises(ValueError, match="instead of client=, pass parallel="):
        runner.submit(range(3), detached=True)
