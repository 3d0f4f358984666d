"""Sessions: one cluster and client per distinct ``parallel`` config, reused across runs.

The registry is explicit: :func:`sessions` lists what is open and
:func:`shutdown` closes it (and runs at interpreter exit). Kit closes only
clusters it started itself, never a remote scheduler it merely connected to.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

from omegaconf import DictConfig

from kit._base.errors import ClusterError, NoWorkersError
from kit.cluster._bounded import SetupCancelled
from kit.cluster._builders import SubmitHook, close_cluster, job_states, submit_failures
from kit.cluster._envs import EnvCache
from kit.config import ParallelConfig, parallel_section
from kit.config._api import plain_hash
from kit.provider import Env, EnvironmentProvider

__all__ = [
    "Session",
    "SessionState",
    "SetupCancelled",
    "get_session",
    "session_for_client",
    "sessions",
    "shutdown",
]

_LOCK = threading.RLock()
_SESSIONS: dict[str, Session] = {}
_ATEXIT_REGISTERED = False


class SessionState(StrEnum):
    """Where a session stands.

    Examples
    --------
    >>> session = get_session({"env": "inline"})
    >>> session.state
    <SessionState.OPEN: 'open'>
    """

    #: Runs may use it.
    OPEN = "open"
    #: :meth:`Session.close` (or :func:`shutdown`) closed it.
    CLOSED = "closed"
    #: Its client went away (the scheduler stopped, or the user closed the client).
    LOST = "lost"


@dataclass(eq=False)
class Session:
    """An open place to run items: inline, or a Dask client (and maybe its cluster).

    Attributes
    ----------
    key
        Hash of the ``parallel`` section this session was made for.
    parallel
        That section.
    client
        The Dask client, or None for inline.
    cluster
        The cluster object Kit started (LocalCluster, a job-queue cluster),
        or None when Kit only connected to a remote scheduler.
    job_logs
        Where a job-queue cluster's jobs write their output files
        (``slurm-*.out`` and the like), or None for other clusters.

    Examples
    --------
    >>> session = get_session({"env": "inline"})
    >>> session.describe()["workers"], session.dashboard_link
    (1, None)

    A session closes at the end of a ``with`` block:

    >>> with get_session({"env": "inline", "max_envs": 2}) as session:
    ...     session.state
    <SessionState.OPEN: 'open'>
    >>> session.state
    <SessionState.CLOSED: 'closed'>
    """

    key: str
    parallel: ParallelConfig
    client: Any = None
    cluster: Any = None
    started: float = field(default_factory=time.time)
    submit_hook: SubmitHook | None = field(default=None, repr=False)
    #: The client was made by the user: Kit forgets it on close, never closes it.
    borrowed: bool = False
    job_logs: str | None = None
    #: The envs this session keeps (see :class:`kit.cluster._envs.EnvCache`).
    envs: EnvCache = field(init=False, repr=False)
    #: The keys of this session's runs on a shared cluster while they run, by run id: the
    #: scheduler cancels a run for its key (or the teacher's token), not for a name.
    run_keys: dict[str, str] = field(default_factory=dict, repr=False)
    _closed: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        self.envs = EnvCache(
            self.parallel.max_envs,
            self.client,
            self.wait_for_workers,
            self.parallel.env_idle_timeout,
        )

    @property
    def state(self) -> SessionState:
        """Open, closed by :meth:`close`, or lost (its client went away)."""
        if self._closed:
            return SessionState.CLOSED
        if self.client is not None and self.client.status != "running":
            return SessionState.LOST
        return SessionState.OPEN

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or its client went away)."""
        return self.state is not SessionState.OPEN

    @property
    def local_envs(self) -> dict[str, Env]:
        """The envs built in this process (inline sessions), by name."""
        return self.envs.local_envs

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard address, or None (inline, or no bokeh installed)."""
        if self.client is None:
            return None
        try:
            link: str | None = self.client.dashboard_link
        except Exception:  # no dashboard running (bokeh missing)
            return None
        return link

    @property
    def n_workers(self) -> int:
        """Worker threads available now (1 for inline)."""
        if self.client is None:
            return 1
        threads: dict[str, int] = self.client.nthreads()
        return max(1, sum(threads.values()))

    @property
    def threads_at_attach(self) -> int:
        """Worker threads counted by the latest :meth:`attach` (1 for inline)."""
        return self.envs.threads if self.client is not None else 1

    def attach(
        self,
        provider: EnvironmentProvider,
        *,
        should_stop: Callable[[], bool] | None = None,
        timeout: float | None = None,
    ) -> tuple[str, list[str]]:
        """Make ``provider``'s env available; return its name and keys.

        Inline, the env is built once with ``build_env_local`` and kept in
        this session. On a cluster it is built by a worker plugin on every
        worker (and on workers that join later). The env is named by the
        provider's class and :meth:`~kit.EnvironmentProvider.env_config`; up to
        ``parallel.max_envs`` envs of one provider class are kept, the least
        recently used one not held by a run torn down first. The caller holds
        the env until it calls :meth:`release` with its name.

        With ``should_stop`` or ``timeout`` (``runner.setup_timeout``), the
        build is waited for in steps: :class:`SetupCancelled` once
        ``should_stop()`` is true, :class:`ProviderSetupError` after
        ``timeout`` seconds. A build that is given up keeps running where it
        is (Python cannot stop a thread) and its env is released when it
        ends; a later run builds afresh.
        """
        return self.envs.attach(provider, should_stop=should_stop, timeout=timeout)

    def release(self, name: str) -> None:
        """Say a run that attached env ``name`` no longer needs it (it may be torn down)."""
        self.envs.release(name)

    def wait_for_workers(
        self, n: int = 1, *, should_stop: Callable[[], bool] | None = None
    ) -> None:
        """Wait until ``n`` workers have joined, up to ``parallel.startup_timeout`` seconds.

        :class:`SetupCancelled` once ``should_stop()`` is true (checked every second).
        """
        if self.client is None:
            return
        timeout = self.parallel.startup_timeout
        deadline = time.monotonic() + timeout
        try:
            # In steps, so a job the queue refused is reported at once, with its output.
            while True:
                try:
                    self.client.wait_for_workers(n, timeout=min(1.0, timeout))
                    return
                except TimeoutError:
                    if should_stop is not None and should_stop():
                        raise SetupCancelled(
                            "the run was cancelled while waiting for workers"
                        ) from None
                    failures = submit_failures(self.cluster)
                    if failures:
                        raise ClusterError(
                            f"the job queue refused the worker job: {failures[-1]}\n"
                            "check parallel.submit_command, parallel.options (queue, "
                            "account, resources) and `kit cluster script` for the script"
                        ) from None
                    if time.monotonic() >= deadline:
                        raise
        except TimeoutError:
            where = (
                "the job queue (squeue, qstat...) and the job logs"
                if self.cluster is not None
                else "the scheduler"
            )
            queue = job_states(self.cluster) if self.cluster is not None else ""
            said = f"; the queue says: {queue}" if queue else ""
            raise NoWorkersError(
                f"no worker joined the cluster within {timeout:g} s (parallel.startup_timeout)"
                f"{said}; check {where}"
            ) from None

    def close(self) -> None:
        """Close the client, and the cluster if Kit started it; tear inline envs down.

        Each inline env goes through its provider's ``teardown_env``, as
        envs on workers do when their plugin is removed.
        """
        self._closed = True
        with _LOCK:
            if _SESSIONS.get(self.key) is self:
                del _SESSIONS[self.key]
        self.envs.close()
        if self.owns_cluster and self.client is not None and self.client.status == "running":
            from kit.cluster._nanny import quiet_worker_for_close

            # A losing copy of a chunk may still run: the close ends it, which is no news;
            # nor is a last heartbeat that finds the scheduler already closed.
            self.client.run(quiet_worker_for_close, on_error="ignore")
        if self.client is not None and not self.borrowed:
            if self.client.status == "connecting":
                _close_lost_client(self.client)
            else:
                self.client.close()
        if self.cluster is not None:
            from kit.cluster._nanny import quiet_nannies, wait_for_restarts

            # A worker killed by the last item may still be restarting: closing its nanny
            # mid-start fails in distributed, so let the restart finish first.
            wait_for_restarts(self.cluster)
            with quiet_nannies():
                close_cluster(self.cluster)

    @property
    def owns_cluster(self) -> bool:
        """Whether closing the session ends its cluster (Kit started it).

        Not for a remote scheduler, nor for a dask-gateway cluster connected
        to by name (the class's): their handle closes, the cluster runs on.
        """
        return self.cluster is not None and getattr(self.cluster, "shutdown_on_close", True)

    def describe(self) -> dict[str, Any]:
        """Describe the session for JSON: env, workers, dashboard."""
        return {
            "key": self.key,
            "parallel": asdict(self.parallel),
            "scheduler": None if self.client is None else self.client.scheduler.address,
            "cluster": None if self.cluster is None else type(self.cluster).__name__,
            "dashboard": self.dashboard_link,
            "workers": self.n_workers,
            "owns_cluster": self.owns_cluster,
            "job_logs": self.job_logs,
        }


def _make(
    parallel: ParallelConfig, key: str, hook: SubmitHook | None, job_logs: str | None
) -> Session:
    if parallel.env == "inline":
        return Session(key, parallel)
    from kit.cluster._builders import JOB_QUEUES, job_log_directory, start

    started = parallel
    logs = None
    if parallel.env in JOB_QUEUES:
        logs = job_log_directory(parallel, job_logs)
        # Not part of the session key: runs with other output folders reuse the cluster.
        started = replace(parallel, options={**parallel.options, "log_directory": logs})
    client, cluster = start(started, hook)
    return Session(key, parallel, client=client, cluster=cluster, submit_hook=hook, job_logs=logs)


class _ReconnectCancelled(logging.Filter):
    """Drop distributed's ERROR for a reconnect cancelled because Kit closes the client."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.exc_info[0] if record.exc_info else None
        return not (kind is not None and issubclass(kind, asyncio.CancelledError))


def _close_lost_client(client: Any) -> None:
    """Close a client that is trying to reconnect to a scheduler that went away.

    Closing cancels its reconnect attempt, which distributed logs as an
    error with a traceback; the run already said the scheduler went away.
    """
    logger = logging.getLogger("distributed.client")
    quiet = _ReconnectCancelled()
    logger.addFilter(quiet)
    try:
        client.close()
    finally:
        logger.removeFilter(quiet)


def get_session(
    parallel: ParallelConfig | DictConfig | Mapping[str, Any] | None,
    *,
    submit_hook: SubmitHook | None = None,
    job_logs: str | os.PathLike[str] | None = None,
) -> Session:
    """Return the open session for ``parallel``, starting one if needed.

    ``submit_hook`` customises how a job-queue cluster submits its jobs: it
    gets the submit command as a list of strings (the job script's path
    last) and returns the command to run, e.g. ``["ssh", "login", *cmd]``.

    ``job_logs`` is the folder a job-queue cluster started here writes its
    jobs' output files to (a run passes ``<output_dir>/job-logs``), unless
    ``parallel.options.log_directory`` says otherwise; see
    :func:`kit.cluster._builders.job_log_directory` for the default.

    Examples
    --------
    >>> session = get_session({"env": "inline"})
    >>> session is get_session({"env": "inline"}), session.client is None
    (True, True)
    """
    section = parallel if isinstance(parallel, ParallelConfig) else parallel_section(parallel)
    key = plain_hash(asdict(section))  # the section is checked: no loader, no parser
    global _ATEXIT_REGISTERED
    with _LOCK:
        session = _SESSIONS.get(key)
        if session is not None and not session.closed:
            if submit_hook is not None and submit_hook is not session.submit_hook:
                raise ValueError(
                    "a session for this parallel config is already open with another "
                    "submit_hook; close it first (session.close() or kit.shutdown())"
                )
            return session
        session = _make(section, key, submit_hook, None if job_logs is None else str(job_logs))
        _SESSIONS[key] = session
        if not _ATEXIT_REGISTERED:
            atexit.register(shutdown)
            _ATEXIT_REGISTERED = True
        return session


def check_client(client: Any) -> None:
    """Raise TypeError unless ``client`` is a Dask client."""
    if not hasattr(client, "run_on_scheduler"):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")


def session_for_client(client: Any) -> Session:
    """Return the session that runs on a Dask client the user made (``Runner(client=c)``).

    It is kept in the registry while the client is open, so runs on the same
    client reuse the env they built; Kit never closes that client.

    Examples
    --------
    >>> session_for_client(None)
    Traceback (most recent call last):
    ...
    TypeError: client must be a distributed.Client, got NoneType
    """
    check_client(client)
    key = f"client:{id(client)}"
    with _LOCK:
        session = _SESSIONS.get(key)
        if session is not None and session.client is client and not session.closed:
            return session
        section = ParallelConfig(env="remote", address=str(client.scheduler.address))
        session = Session(key, section, client=client, borrowed=True)
        _SESSIONS[key] = session
        return session


def sessions() -> list[Session]:
    """Return the open sessions, oldest first.

    Examples
    --------
    >>> isinstance(sessions(), list)
    True
    """
    with _LOCK:
        return sorted(_SESSIONS.values(), key=lambda s: s.started)


def shutdown() -> None:
    """Close every session: clients, and the clusters Kit started.

    Examples
    --------
    >>> shutdown()
    >>> sessions()
    []
    """
    for session in sessions():
        session.close()
