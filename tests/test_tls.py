"""A remote scheduler with TLS: refused without the certificates, runs a job with them."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client

import kit
from tests.servers import Certificates, dask_cluster, make_certificates
from tests.workloads import Affine, ToyProvider, expected, toy_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Certificates]]:
    folder = tmp_path_factory.mktemp("tls")
    certs = make_certificates(folder / "certs")
    require = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
    with dask_cluster(folder, extra=certs.dask_args(), env=require) as address:
        from distributed.security import Security

        sec = Security(  # type: ignore[no-untyped-call]
            tls_ca_file=str(certs.ca),
            tls_client_cert=str(certs.cert),
            tls_client_key=str(certs.key),
        )
        # Both workers in before any test, or trivial items may all land on the first.
        with Client(address, security=sec, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, certs


async def open_client(address: str) -> None:
    async with Client(address, asynchronous=True, timeout=5):
        pass


def security(certs: Certificates) -> dict[str, Any]:
    return {"ca_file": str(certs.ca), "cert_file": str(certs.cert), "key_file": str(certs.key)}


def test_the_scheduler_speaks_tls_only(tls_cluster: tuple[str, Certificates]) -> None:
    # Probed at the socket: a plain Dask client would wait for a handshake that never
    # comes (its connect timeout does not cover that wait), so it proves nothing fast.
    address, certs = tls_cluster
    assert address.startswith("tls://127.0.0.1:")
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(certs.ca))
    context.check_hostname = False
    context.load_cert_chain(str(certs.cert), str(certs.key))
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw) as tls,
    ):
        assert tls.version() is not None  # a TLS handshake with the CA's certificates works
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"\x00" * 64)  # plain bytes where a TLS ClientHello belongs
        try:
            reply = raw.recv(64)
        except ConnectionResetError:
            reply = b""
    assert reply == b"" or reply[0] == 0x15  # closed or reset, or a TLS alert: never Dask


def test_a_client_without_certificates_is_refused(tls_cluster: tuple[str, Certificates]) -> None:
    address, _ = tls_cluster
    with pytest.raises(kit.ConfigError) as info:
        kit.get_session({"env": "remote", "address": address})
    assert str(info.value).startswith(
        f"parallel.security: the scheduler at {address} speaks TLS, and no certificates are given"
    )


def test_a_plain_client_is_refused_by_the_scheduler(tls_cluster: tuple[str, Certificates]) -> None:
    address, _ = tls_cluster
    with pytest.raises(TypeError, match="TLS expects a `ssl_context`"):
        # In a loop of its own, closed afterwards: a failed synchronous Client leaves
        # its IO-loop thread behind, and later clients in this process can hang on it.
        asyncio.run(open_client(address))


def test_certificates_from_another_ca_are_refused(
    tls_cluster: tuple[str, Certificates], tmp_path: Path
) -> None:
    address, _ = tls_cluster
    other = make_certificates(tmp_path / "other", name="stranger")
    parallel = {
        "env": "remote",
        "address": address,
        "security": security(other),
        "options": {"timeout": 5},
    }
    with pytest.raises(
        kit.errors.SchedulerUnreachableError, match="cannot connect to the scheduler at tls://"
    ):
        kit.get_session(parallel)


def test_a_client_with_the_certificates_runs_a_job(tls_cluster: tuple[str, Certificates]) -> None:
    address, certs = tls_cluster
    parallel = {"env": "remote", "address": address, "security": security(certs)}
    try:
        result = Affine(ToyProvider(toy_config()), parallel=parallel).run(range(100))
        assert result.records == expected(range(100))
        assert len(result.stats.workers) == 2
    finally:
        for session in kit.cluster.sessions():
            if session.parallel.address == address:
                session.close()


async def open_client_with(address: str, security: Any) -> None:
    async with Client(address, asynchronous=True, timeout=5, security=security):
        pass


# The intruder's refused clients are distributed's to clean up, and it warns doing so.
@pytest.mark.filterwarnings("ignore:coroutine .wait_for. was never awaited:RuntimeWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_local_cluster_is_closed_to_whoever_lacks_its_credentials(
    local: dict[str, Any],
) -> None:
    from distributed.security import Security

    session = kit.get_session(local)
    address = session.client.scheduler.address
    assert address.startswith("tls://127.0.0.1:")
    # Another user of the machine: with credentials of their own, or none at all.
    with pytest.raises((OSError, TimeoutError)):
        asyncio.run(open_client_with(address, Security.temporary()))  # type: ignore[no-untyped-call]
    with pytest.raises(TypeError, match="TLS expects a `ssl_context`"):
        asyncio.run(open_client(address))
    assert session.client.submit(sum, [1, 2]).result() == 3
