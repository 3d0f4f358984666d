"""A process without a Kit local cluster's credentials knocks on its ports: refused, quietly."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

#: Start a 1-worker cluster over TLS (Kit's, or distributed's own with throwaway
#: credentials), print its scheduler's and worker's addresses, wait for a line, make a
#: round trip through both listeners, close.
CLUSTER = """
import sys
{start}
print(*[client.scheduler.address, *client.scheduler_info()["workers"]], flush=True)
sys.stdin.readline()
client.run(lambda: 1)  # through the scheduler's listener, then the worker's, after the knocks
{close}
"""
KIT = CLUSTER.format(
    start="import kit\nclient = kit.get_session({'env': 'local', 'n_workers': 1}).client",
    close="kit.shutdown()",
)
DISTRIBUTED = CLUSTER.format(
    start="from distributed import Client, LocalCluster\n"
    "from distributed.security import Security\n"
    "security = Security.temporary()\n"
    "cluster = LocalCluster(n_workers=1, threads_per_worker=1, host='127.0.0.1',\n"
    "                       security=security, dashboard_address=None)\n"
    "client = Client(cluster, security=security)",
    close="client.close(); cluster.close()",
)


def knocked(code: str) -> str:
    """Run ``code``, knock on each address it prints (connect, close), return its stderr."""
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        addresses = process.stdout.readline().split()
        assert len(addresses) == 2 and all(a.startswith("tls://") for a in addresses), addresses
        for address in addresses:
            host, port = address.removeprefix("tls://").rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=30).close()
        _, stderr = process.communicate("go\n", timeout=120)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, stderr[-3000:]
    return stderr


def test_a_knock_on_a_kit_clusters_ports_is_refused_without_a_word_in_the_users_output() -> None:
    # Without Kit, the same knocks put distributed's warning in the user's output...
    plain = knocked(DISTRIBUTED)
    assert plain.count("TLS handshake failed") == 2, plain[-3000:]  # scheduler's and worker's
    # ... on a cluster Kit starts, neither does: the stranger is refused, not reported.
    assert "TLS handshake failed" not in knocked(KIT)


def test_a_preload_the_user_names_runs_on_the_workers_beside_kits(tmp_path: Path) -> None:
    import logging

    import kit
    from kit.cluster._knocks import KNOCK_LOG, RefusedKnocks

    mark = tmp_path / "preloaded"
    preload = tmp_path / "mine.py"
    preload.write_text(f"def dask_setup(worker):\n    open({str(mark)!r}, 'w').close()\n")
    # One module as a string, as a config's `parallel.options.preload` may give it.
    parallel = {"env": "local", "n_workers": 1, "options": {"preload": str(preload)}}
    session = kit.get_session(parallel)
    try:

        def quiet() -> bool:
            return any(isinstance(f, RefusedKnocks) for f in logging.getLogger(KNOCK_LOG).filters)

        assert list(session.client.run(quiet).values()) == [True]
        assert mark.exists()
    finally:
        session.close()
