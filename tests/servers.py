"""Real servers for tests: a Dask cluster from the `dask scheduler`/`dask worker` programs,
`mlflow server` and `tensorboard`, and throwaway TLS certificates made with openssl."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).with_name("dask"))


@contextlib.contextmanager
def dask_cluster(
    folder: Path,
    n_workers: int = 2,
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
    threads: int = 1,
) -> Iterator[str]:
    """Start a scheduler and workers of ``threads`` threads on 127.0.0.1; yield its address."""
    scheduler_file = folder / "scheduler.json"
    environ = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    common = {
        "env": environ,
        "cwd": folder,
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
    }
    protocol = ["--protocol", "tls"] if any(a.startswith("--tls") for a in extra) else []
    # Picked before anything starts, so a pick that fails leaves no process behind.
    ports = [dask_port_range() for _ in range(2 * n_workers)]  # a worker's and its nanny's
    # Every listener on a test port, none on one the kernel hands out: a test that kills
    # this scheduler leaves its workers dialing its port until they stop, and a port from
    # the ephemeral range may by then be another test's TLS cluster's (a notebook's kernel
    # logged each knock in JupyterLab's log console).
    scheduler = subprocess.Popen(
        [
            DASK,
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
            *protocol,
            *extra,
        ],
        **common,  # type: ignore[call-overload]
    )
    workers: list[subprocess.Popen[bytes]] = []
    try:
        deadline = time.monotonic() + 60
        # Until the file parses, not until it exists: the scheduler creates it and then
        # writes it, and a busy machine once let this read it empty in between.
        while (address := scheduler_address(scheduler_file)) is None:
            assert time.monotonic() < deadline, "the scheduler did not start"
            assert scheduler.poll() is None, "the scheduler exited"
            time.sleep(0.1)
        workers = [
            subprocess.Popen(
                [
                    DASK,
                    "worker",
                    "--scheduler-file",
                    str(scheduler_file),
                    "--nthreads",
                    str(threads),
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                    "--worker-port",
                    ports[2 * i],
                    "--nanny-port",
                    ports[2 * i + 1],
                    *extra,
                ],
                **common,  # type: ignore[call-overload]
            )
            for i in range(n_workers)
        ]
        if not protocol and n_workers:  # a TLS cluster's test connects with its own credentials
            # The cluster the test asked for, whole: a worker still joining on a busy
            # machine would leave the test's first run on half the threads it counts.
            from distributed import Client

            with Client(address, timeout=60) as client:
                client.wait_for_workers(n_workers, timeout=120)
        yield address
    finally:
        # The workers first, while their scheduler still answers: a worker told to stop
        # closes in a fraction of a second when it can say goodbye, and waits out its
        # reconnect timeouts when the scheduler went first.
        stop(workers)
        stop([scheduler])
        release(ports)


def scheduler_address(scheduler_file: Path) -> str | None:
    """The address in ``scheduler_file``, or None while it is missing or half written."""
    try:
        return str(json.loads(scheduler_file.read_text())["address"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """Terminate ``processes`` together; kill those still there 5 s on."""
    for proc in processes:
        proc.terminate()
    for proc in processes:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


#: Where the tests pick the ports of the servers they start: below the kernel's
#: ephemeral range (32768-60999 on Linux), which it hands out for port 0. A port
#: picked there could be given to another process's listener (a scheduler another
#: test starts on port 0) between the pick and the server's start, and the test's
#: readiness probe would then knock at that process; one picked here cannot.
TEST_PORTS = range(20_000, 32_000)


#: The test ports this process handed out (free_port, dask_port_range): a server given
#: one may not be listening yet when the next is picked (a hub's proxy and its API were
#: once given the same port).
_HANDED_OUT: set[int] = set()


def my_test_ports() -> range:
    """This test process's slice of :data:`TEST_PORTS` (the whole range outside pytest-xdist).

    Each pytest-xdist worker picks in a slice of its own, so two test processes
    never pick the same port between one's pick and its server's bind.
    """
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    size = len(TEST_PORTS) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return TEST_PORTS[worker * size : (worker + 1) * size]


def dask_port_range(span: int = 100) -> str:
    """Test ports ``first:last`` for a Dask worker or nanny, which takes the first free one.

    They stay handed out until :func:`release` gives them back.
    """
    mine, rng = my_test_ports(), random.Random()
    for _ in range(200):
        first = rng.randrange(mine.start, mine.stop - span)
        ports = range(first, first + span + 1)
        if not _HANDED_OUT.intersection(ports):
            _HANDED_OUT.update(ports)
            return f"{first}:{first + span}"
    raise RuntimeError(f"no {span + 1} test ports in a row left in {mine}")


def release(port_ranges: Sequence[str]) -> None:
    """Hand out again the ports of ``port_ranges`` (from :func:`dask_port_range`)."""
    for port_range in port_ranges:
        first, last = map(int, port_range.split(":"))
        _HANDED_OUT.difference_update(range(first, last + 1))


def free_port() -> int:
    """A test port nothing listens on now and not handed out before in this process."""
    mine, rng = my_test_ports(), random.Random()
    for _ in range(200):
        port = rng.choice(mine)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another test's server
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError(f"no free port in {mine}: is every one taken?")


@contextlib.contextmanager
def http_server(command: Sequence[str], ready: str, folder: Path) -> Iterator[str]:
    """Run a program serving HTTP on 127.0.0.1 (``{port}`` in ``command``); yield its base URL.

    Ready when ``ready`` (a path) answers 200; its output goes to ``folder/server.log``.
    """
    port = free_port()
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(
        [part.format(port=port) for part in command],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            said = (folder / "server.log").read_text
            assert proc.poll() is None, f"{command[0]} exited: {said()}"
            try:
                with urllib.request.urlopen(base + ready, timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"{command[0]} did not answer within 120 s"
            time.sleep(0.2)
        yield base
    finally:
        stop_group(proc)
        log.close()


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the group ``proc`` leads (it started a session of its own); kill it 10 s on."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def mlflow_server(store_uri: str, folder: Path) -> contextlib.AbstractContextManager[str]:
    """``mlflow server`` on ``store_uri`` (one worker), on 127.0.0.1; yields its URL."""
    mlflow = str(Path(sys.executable).with_name("mlflow"))
    command = [mlflow, "server", "--backend-store-uri", store_uri, "--host", "127.0.0.1"]
    command += ["--port", "{port}", "--workers", "1"]
    return http_server(command, "/health", folder)


def tensorboard_server(logdir: Path, folder: Path) -> contextlib.AbstractContextManager[str]:
    """``tensorboard --logdir`` on 127.0.0.1; yields its URL."""
    tensorboard = str(Path(sys.executable).with_name("tensorboard"))
    command = [tensorboard, "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "{port}"]
    return http_server(command, "/data/runs", folder)


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path

    def dask_args(self) -> list[str]:
        return [
            "--tls-ca-file",
            str(self.ca),
            "--tls-cert",
            str(self.cert),
            "--tls-key",
            str(self.key),
        ]


def make_certificates(folder: Path, name: str = "kit-test") -> Certificates:
    """A throwaway CA and one certificate for 127.0.0.1 signed by it."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed (installed by .ci/system-deps.sh)"
    folder.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=folder, check=True, capture_output=True)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        f"/CN={name}-ca",
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "node.key",
        "-out",
        "node.csr",
        "-subj",
        "/CN=127.0.0.1",
    )
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run(
        "x509",
        "-req",
        "-in",
        "node.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "node.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
    )
    return Certificates(folder / "ca.pem", folder / "node.pem", folder / "node.key")


GATEWAY_CONFIG = """\
c.Gateway.address = "127.0.0.1:{api}"
c.Gateway.backend_class = "dask_gateway_server.backends.local.UnsafeLocalBackend"
c.Gateway.authenticator_class = "dask_gateway_server.auth.SimpleAuthenticator"
c.SimpleAuthenticator.password = {password!r}
c.ClusterConfig.worker_cores = 1
c.ClusterConfig.worker_memory = "1 G"
c.ClusterConfig.scheduler_memory = "1 G"
c.ClusterConfig.scheduler_cmd = [{dask!r}, "scheduler"]
c.ClusterConfig.worker_cmd = [{dask!r}, "worker"]
c.ClusterConfig.environment = {{"PYTHONPATH": {python_path!r}}}
# The local backend copies PYTHONPATH from its own environment over the one above: a
# developer's PYTHONPATH would hide the tests' package from the workers.
c.UnsafeLocalBackend.inherited_environment = ["PATH", "VIRTUAL_ENV", "LANG", "LC_ALL"]
c.UnsafeLocalBackend.clusters_directory = {clusters!r}
"""


@contextlib.contextmanager
def gateway_server(folder: Path, password: str) -> Iterator[str]:
    """A dask-gateway-server on 127.0.0.1: local processes, a password for every user.

    Its wheel ships the proxy; the local backend and the simple authenticator
    need no root and no network. Yields the address clients use.
    """
    config = folder / "gateway_config.py"
    config.write_text(
        GATEWAY_CONFIG.format(
            api=free_port(),
            password=password,
            dask=DASK,
            python_path=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            clusters=str(folder / "clusters"),
        )
    )
    server = str(Path(sys.executable).with_name("dask-gateway-server"))
    # The proxy's address is the one clients use: the port http_server chose.
    command = [server, "-f", str(config), "--Proxy.address=127.0.0.1:{port}"]
    with http_server(command, "/api/health", folder) as address:
        yield address
