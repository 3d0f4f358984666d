"""Sessions: one cluster and client per distinct ``parallel`` config, reused across runs.

The registry is explicit: :func:`sessions` lists what is open and
:func:`shutdown` closes it (and runs at interpreter exit). Kit closes only
clusters it started itself, never a remote scheduler it merely connected to.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import os
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

import cloudpickle
from omegaconf import DictConfig

from kit._clusters import SubmitHook, job_states, submit_failures
from kit._errors import KitError
from kit.config import ParallelConfig, config_hash, parallel_section
from kit.provider import (
    Env,
    EnvironmentProvider,
    ProviderSetupError,
    check_env,
    env_name_prefix,
    env_only_setup,
    reading_env,
)

T = TypeVar("T")

_LOCK = threading.RLock()
_SESSIONS: dict[str, Session] = {}
_ATEXIT_REGISTERED = False


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
    """

    key: str
    parallel: ParallelConfig
    client: Any = None
    cluster: Any = None
    started: float = field(default_factory=time.time)
    local_envs: dict[str, Env] = field(default_factory=dict, repr=False)
    submit_hook: SubmitHook | None = field(default=None, repr=False)
    # Env keys of the plugins this session registered, so a later run with the
    # same provider config costs one scheduler call instead of four.
    _env_keys: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _threads: int = field(default=0, repr=False)
    # Runs holding each env now (never torn down while held), and env names by
    # last use, least recent first: past parallel.max_envs, the first idle one goes.
    _in_use: Counter[str] = field(default_factory=Counter, repr=False)
    _recent: list[str] = field(default_factory=list, repr=False)
    _envs_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _building: dict[str, threading.Lock] = field(default_factory=dict, repr=False)
    # Envs one attach is tearing down now: runs attaching other envs at once (a
    # sweep's trials) must not pick them too, or the second teardown finds none.
    _leaving: set[str] = field(default_factory=set, repr=False)
    #: The client was made by the user: Kit forgets it on close, never closes it.
    borrowed: bool = False
    job_logs: str | None = None
    _closed: bool = field(default=False, repr=False)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or its client went away)."""
        return self._closed or (self.client is not None and self.client.status != "running")

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
        return self._threads if self.client is not None else 1

    def attach(
        self,
        provider: EnvironmentProvider,
        *,
        should_stop: Callable[[], bool] | None = None,
        timeout: float | None = None,
    ) -> tuple[str, list[str]]:
        """Make ``provider``'s env available; return its name and keys.

        Inline, the env is built once with ``build_env_local`` and cached in
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
        name = provider.env_name()
        label = type(provider).__qualname__
        with self._envs_lock:
            self._in_use[name] += 1
            if name in self._recent:
                self._recent.remove(name)
            self._recent.append(name)
            # Runs attaching one env at once (a sweep's trials) wait for the first to
            # build it: a second registration returns before the workers have the env.
            building = self._building.setdefault(name, threading.Lock())
        try:
            built = provider.for_env()
            with building:
                if self.client is None:
                    return name, self._attach_inline(built, name, label, should_stop, timeout)
                return name, self._attach_cluster(built, name, label, should_stop, timeout)
        except BaseException:
            self.release(name)
            raise

    def release(self, name: str) -> None:
        """Say a run that attached env ``name`` no longer needs it (it may be torn down)."""
        with self._envs_lock:
            self._in_use[name] -= 1
            if self._in_use[name] <= 0:
                del self._in_use[name]

    def _stale(self, provider: EnvironmentProvider, name: str, present: list[str]) -> list[str]:
        """Envs of ``provider``'s class to tear down before ``name`` joins them.

        At most ``parallel.max_envs`` are kept, the least recently used idle
        ones going first; an env a run holds stays, over the bound if need be.
        The envs returned are claimed: call :meth:`_gone` with them once torn down.
        """
        prefix = env_name_prefix(type(provider))
        with self._envs_lock:
            order = {n: i for i, n in enumerate(self._recent)}
            others = sorted(
                (
                    n
                    for n in present
                    if n.startswith(prefix) and n != name and n not in self._leaving
                ),
                key=lambda n: order.get(n, -1),
            )
            excess = len(others) - (self.parallel.max_envs - 1)
            idle = [n for n in others if self._in_use[n] == 0]
            stale = idle[: max(0, excess)]
            for old in stale:
                if old in self._recent:
                    self._recent.remove(old)
            self._leaving.update(stale)
            return stale

    def _gone(self, stale: list[str]) -> None:
        """Say the envs :meth:`_stale` claimed are torn down (or that it was given up)."""
        with self._envs_lock:
            self._leaving.difference_update(stale)

    def _attach_inline(
        self,
        provider: EnvironmentProvider,
        name: str,
        label: str,
        should_stop: Callable[[], bool] | None,
        timeout: float | None,
    ) -> list[str]:
        if name not in self.local_envs:
            stale = self._stale(provider, name, list(self.local_envs))
            try:
                for old in stale:
                    _teardown_stale(provider, self.local_envs.pop(old), label)
            finally:
                self._gone(stale)
            self.local_envs[name] = _bounded(
                functools.partial(_build_local, provider, label),
                should_stop,
                timeout,
                label,
                on_late=functools.partial(_teardown_stale, provider, label=label),
            )
        return sorted(self.local_envs[name])

    def _attach_cluster(
        self,
        provider: EnvironmentProvider,
        name: str,
        label: str,
        should_stop: Callable[[], bool] | None,
        timeout: float | None,
    ) -> list[str]:
        from kit._plugin import scheduler_state

        state = self.client.run_on_scheduler(scheduler_state)
        if state["threads"] == 0:
            self.wait_for_workers(should_stop=should_stop)
            state = self.client.run_on_scheduler(scheduler_state)
        self._threads = max(1, state["threads"])
        keys = self._env_keys.get(name)
        if keys is None or name not in state["plugins"]:
            stale = self._stale(provider, name, state["plugins"])
            register = functools.partial(
                _attach_to_cluster, self.client, provider, name, label, stale
            )
            try:
                keys = _bounded(register, should_stop, timeout, label)
            except (SetupCancelled, ProviderSetupError):
                # Workers still building it drop the env when the build ends.
                _drop_plugin(self.client, name)
                raise
            finally:
                self._gone(stale)
            for old in stale:
                self._env_keys.pop(old, None)
            self._env_keys[name] = keys
        return keys

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
                        raise RuntimeError(
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
            raise TimeoutError(
                f"no worker joined the cluster within {timeout:g} s (parallel.startup_timeout)"
                f"{said}; check {where}"
            ) from None

    def close(self) -> None:
        """Close the client, and the cluster if Kit started it."""
        self._closed = True
        with _LOCK:
            if _SESSIONS.get(self.key) is self:
                del _SESSIONS[self.key]
        for env in self.local_envs.values():
            _close_quietly(env)
        self.local_envs.clear()
        if self.client is not None and not self.borrowed:
            if self.client.status == "connecting":
                _close_lost_client(self.client)
            else:
                self.client.close()
        if self.cluster is not None:
            from kit._nanny import wait_for_restarts

            # A worker killed by the last item may still be restarting: closing its nanny
            # mid-start fails in distributed, so let the restart finish first.
            wait_for_restarts(self.cluster)
            self.cluster.close()

    def describe(self) -> dict[str, Any]:
        """Describe the session for JSON: env, workers, dashboard."""
        return {
            "key": self.key,
            "parallel": asdict(self.parallel),
            "scheduler": None if self.client is None else self.client.scheduler.address,
            "cluster": None if self.cluster is None else type(self.cluster).__name__,
            "dashboard": self.dashboard_link,
            "workers": self.n_workers,
            "owns_cluster": self.cluster is not None,
            "job_logs": self.job_logs,
        }


class SetupCancelled(Exception):
    """The run was cancelled while its session was waiting for workers or an env."""


#: Seconds between checks for cancellation while an env is built.
SETUP_STEP = 0.1


def _build_local(provider: EnvironmentProvider, label: str) -> Env:
    with reading_env(type(provider)):
        env = provider.build_env_local()
    return check_env(env, label, "build_env_local()")


def _bounded(
    fn: Callable[[], T],
    should_stop: Callable[[], bool] | None,
    timeout: float | None,
    label: str,
    on_late: Callable[[T], None] | None = None,
) -> T:
    """Call ``fn`` on a helper thread; give up on cancellation or after ``timeout`` s.

    A call given up on goes on in the background; ``on_late`` gets its result
    if it ever ends, so nothing it built is kept. With neither bound, ``fn``
    runs on this thread: there is nothing to give up on.
    """
    if should_stop is None and timeout is None:
        return fn()
    lock = threading.Lock()
    box: dict[str, Any] = {}
    done = threading.Event()

    def call() -> None:
        try:
            value = fn()
        except BaseException as exc:
            with lock:
                box["error"] = exc
                done.set()
            return
        with lock:
            late = box.get("abandoned", False)
            box["value"] = value
            done.set()
        if late and on_late is not None:
            on_late(value)

    threading.Thread(target=call, name=f"kit-setup-{label}", daemon=True).start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(SETUP_STEP):
        stop = should_stop is not None and should_stop()
        if stop or (deadline is not None and time.monotonic() >= deadline):
            with lock:
                if done.is_set():
                    break
                box["abandoned"] = True
            if stop:
                raise SetupCancelled(f"{label}: the run was cancelled while its env was built")
            raise ProviderSetupError(
                f"{label}: building the env took longer than {timeout:g} s "
                "(runner.setup_timeout); the build goes on in the background and its env "
                "is released when it ends. Check what the provider's setup waits for (a "
                "download, a lock, a device), or raise runner.setup_timeout"
            )
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def _teardown_stale(provider: EnvironmentProvider, env: Env, label: str) -> None:
    # The stale env belongs to an earlier run whose outcome is settled, or to a
    # build given up on; its failing teardown must not fail the run going on.
    try:
        provider.teardown_env(env)
    except Exception as exc:
        warnings.warn(
            f"{label}: tearing down the previous env failed ({type(exc).__name__}: {exc}); "
            "the new env is built anyway",
            RuntimeWarning,
            stacklevel=3,
        )


def _close_quietly(env: Env) -> None:
    for value in env.values():
        close = getattr(value, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()


def _drop_plugin(client: Any, name: str) -> None:
    """Unregister plugin ``name`` if the scheduler has it.

    Unregistering one it does not have makes the scheduler log an ERROR with
    a traceback, beside the clear error the run already gives.
    """
    from kit._plugin import scheduler_state

    with contextlib.suppress(Exception):
        if name in client.run_on_scheduler(scheduler_state)["plugins"]:
            client.unregister_worker_plugin(name)


def _attach_to_cluster(
    client: Any, provider: EnvironmentProvider, name: str, label: str, stale: list[str]
) -> list[str]:
    from kit._plugin import ProviderPlugin, env_report

    for old in stale:
        # Gone already is fine: another client of a shared scheduler may have removed it.
        with contextlib.suppress(ValueError):
            client.unregister_worker_plugin(old)
    with reading_env(type(provider)):  # make_worker_setup_fn may read the config here
        setup = functools.partial(env_only_setup, provider.worker_setup_fn(), type(provider))
    plugin = ProviderPlugin(name, label, cloudpickle.dumps(setup), cloudpickle.dumps(provider))
    try:
        client.register_plugin(plugin, name=name)
    except Exception as exc:
        # Leave nothing half-registered: a later worker must not retry a broken setup.
        _drop_plugin(client, name)
        if isinstance(exc, KitError):
            raise exc.with_traceback(None) from None  # the provider's own ConfigError, say
        raise ProviderSetupError(
            f"{label}: registering the env on the workers failed: {exc!r}"
        ) from exc
    reports = client.run(env_report, name)
    keys: set[str] = set()
    for report in reports.values():
        keys.update(report["keys"])
    return sorted(keys)


def _make(
    parallel: ParallelConfig, key: str, hook: SubmitHook | None, job_logs: str | None
) -> Session:
    if parallel.env == "inline":
        return Session(key, parallel)
    from kit._clusters import JOB_QUEUES, job_log_directory, start

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
    :func:`kit._clusters.job_log_directory` for the default.

    Examples
    --------
    >>> session = get_session({"env": "inline"})
    >>> session is get_session({"env": "inline"}), session.client is None
    (True, True)
    """
    section = parallel if isinstance(parallel, ParallelConfig) else parallel_section(parallel)
    key = config_hash(asdict(section))
    global _ATEXIT_REGISTERED
    with _LOCK:
        session = _SESSIONS.get(key)
        if session is not None and (session.client is None or session.client.status == "running"):
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
        if session is not None and session.client is client and client.status == "running":
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
