"""A class's cluster in one command: ``kit cluster start --class``.

A scheduler and workers of Kit's nannies on this machine, the teacher's
claim (:func:`~kit.cluster._teacher.claim`), and the one line attendees add.
The command stays in the foreground, as ``dask scheduler`` does: the class
ends with it (Ctrl-C), and nothing is left running behind the teacher's back.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit._base.errors import ClusterError


@dataclass(frozen=True)
class ClassCluster:
    """A class cluster as started: where attendees reach it, the teacher's token, its size."""

    address: str
    dashboard: str | None
    workers: int
    threads: int
    teacher: str | None
    token: Path | None

    def lines(self) -> list[str]:
        """Return what the command prints: the cluster, the attendees' line, the token.

        Examples
        --------
        >>> started = ClassCluster("tcp://127.0.0.1:8786", None, 2, 2, "tina@lab", Path("t"))
        >>> for line in started.lines():
        ...     print(line)
        class cluster at tcp://127.0.0.1:8786: 2 workers x 2 threads
        attendees add: KIT_CLASS_CLUSTER=tcp://127.0.0.1:8786
        tina@lab is this class's teacher; the token is in t (readable by you alone)
        Ctrl-C ends the class (its scheduler and workers)
        """
        said = [
            f"class cluster at {self.address}: {self.workers} workers x {self.threads} threads",
            f"attendees add: KIT_CLASS_CLUSTER={self.address}",
        ]
        if self.dashboard:
            said.append(f"Dask's dashboard: {self.dashboard}")
        if self.teacher is not None:
            said.append(
                f"{self.teacher} is this class's teacher; the token is in {self.token} "
                "(readable by you alone)"
            )
        said.append("Ctrl-C ends the class (its scheduler and workers)")
        return said


@contextmanager
def class_cluster(
    workers: int,
    threads: int,
    *,
    host: str = "127.0.0.1",
    port: int = 8786,
    memory_limit: str = "auto",
    claim_it: bool = True,
) -> Iterator[tuple[ClassCluster, Any]]:
    """Start a class's cluster; yield it and a client of it; close both at the end.

    Plain TCP: on one machine (a JupyterHub's) attendees reach it on
    127.0.0.1. Listening on another ``host`` lets any machine that reaches it
    run code there: the teaching page says when to use TLS or dask-gateway.
    """
    from distributed import Client

    from kit.cluster._teacher import claim

    try:
        cluster = _local_cluster(workers, threads, host, port, memory_limit)
    except (OSError, RuntimeError) as exc:  # the port taken, say
        cause: BaseException = exc
        while cause.__cause__ is not None or cause.__context__ is not None:
            cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
        raise ClusterError(f"cannot start the cluster on {host}:{port}: {cause}") from None
    try:
        client = Client(cluster, set_as_default=False)  # type: ignore[no-untyped-call]
        try:
            teacher, token = claim(client) if claim_it else (None, None)
            yield (
                ClassCluster(
                    cluster.scheduler_address,
                    cluster.dashboard_link,
                    workers,
                    threads,
                    teacher,
                    token,
                ),
                client,
            )
        finally:
            client.close()  # type: ignore[no-untyped-call]
    finally:
        cluster.close()


@contextmanager
def deaf_workers() -> Iterator[None]:
    """Have the workers started meanwhile ignore Ctrl-C; this process takes it.

    A terminal's Ctrl-C goes to every process of its group: each worker
    would die with a ``KeyboardInterrupt`` traceback before the class is
    closed in order. The workers inherit :data:`~kit.cluster._knocks.DEAF` from
    this process's environment (a worker started again later too), and
    their preload ignores SIGINT; :func:`wait_for_the_end` takes it here.
    """
    from kit.cluster._knocks import DEAF

    before = os.environ.get(DEAF)
    os.environ[DEAF] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEAF, None)
        else:
            os.environ[DEAF] = before


def wait_for_the_end() -> None:
    """Block until SIGINT (Ctrl-C) or SIGTERM; the caller then closes the class."""
    stop = threading.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _local_cluster(workers: int, threads: int, host: str, port: int, memory_limit: str) -> Any:
    """Return a LocalCluster of Kit's nannies, plain TCP, with Kit's allowed failures."""
    from distributed import LocalCluster

    from kit.cluster._builders import ALLOWED_FAILURES
    from kit.cluster._nanny import KitNanny

    return LocalCluster(  # type: ignore[no-untyped-call]
        worker_class=KitNanny,
        n_workers=workers,
        threads_per_worker=threads,
        processes=True,
        host=host,
        scheduler_port=port,
        dashboard_address=f"{host}:0",
        memory_limit=memory_limit,
        protocol="tcp://",
        scheduler_kwargs={"allowed_failures": ALLOWED_FAILURES},
    )
