"""The envs a session keeps: built once, held by the runs using them, evicted least recently used.

Inline, an env is built in this process by ``build_env_local``; on a
cluster, a worker plugin builds it on every worker (and on workers that
join later). Envs are named by the provider's class and
:meth:`~kit.EnvironmentProvider.env_config`; up to ``parallel.max_envs``
envs of one provider class are kept.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import cloudpickle

from kit._base.errors import KitError
from kit.cluster._bounded import bounded
from kit.cluster._env_ledger import EnvLedger
from kit.provider import (
    Env,
    EnvironmentProvider,
    ProviderSetupError,
    check_env,
    env_only_setup,
    reading_env,
)


class EnvCache:
    """The envs of one session: attach, hold, evict, tear down.

    Inline, this process keeps the envs and an :class:`~kit.cluster._env_ledger.EnvLedger`
    of its own decides which go. On a cluster the scheduler's ledger decides
    for every client (:mod:`kit.cluster._shared`): a run's hold is taken
    there, so no other client's run tears down an env this one uses.

    Parameters
    ----------
    max_envs
        Envs of one provider class kept at most (``parallel.max_envs``).
    client
        The session's Dask client, or None: envs are built in this process.
    wait_for_workers
        Called with ``should_stop`` when a cluster has no worker yet.
    idle_timeout
        Seconds an env nobody holds is kept (``parallel.env_idle_timeout``);
        None keeps it.

    Examples
    --------
    >>> from kit import EnvironmentProvider
    >>> class Tables(EnvironmentProvider):
    ...     def build_env_local(self):
    ...         return {"table": [1, 2, 3]}
    ...     def make_worker_setup_fn(self):
    ...         return self.build_env_local
    >>> envs = EnvCache(max_envs=2, client=None)
    >>> name, keys = envs.attach(Tables({}))
    >>> keys, envs.local(name)["table"]
    (['table'], [1, 2, 3])
    >>> envs.release(name); envs.close()
    """

    def __init__(
        self,
        max_envs: int,
        client: Any,
        wait_for_workers: Callable[..., None] = lambda should_stop: None,
        idle_timeout: float | None = None,
    ) -> None:
        self.max_envs = max_envs
        self.client = client
        self.idle_timeout = idle_timeout
        self._wait_for_workers = wait_for_workers
        #: Worker threads counted by the latest attach on a cluster (1 inline).
        self.threads = 1
        # Inline envs with the provider that built them, which tears them down.
        self._local: dict[str, tuple[EnvironmentProvider, Env]] = {}
        # Env keys of the plugins registered here, so a later run with the same
        # provider config costs one scheduler call.
        self._keys: dict[str, list[str]] = {}
        # The ledger of inline envs (a cluster's is on its scheduler), and the hold
        # ids this process took, by env: release(name) lets go of one of them.
        self._ledger = EnvLedger()
        self._holds: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._gone_inline = threading.Condition(self._lock)
        self._building: dict[str, threading.Lock] = {}

    def local(self, name: str) -> Env:
        """Return the inline env ``name`` (attached and held by the caller)."""
        return self._local[name][1]

    @property
    def local_envs(self) -> dict[str, Env]:
        """The inline envs kept now, by name (a copy)."""
        return {name: env for name, (_, env) in self._local.items()}

    def attach(
        self,
        provider: EnvironmentProvider,
        *,
        should_stop: Callable[[], bool] | None = None,
        timeout: float | None = None,
    ) -> tuple[str, list[str]]:
        """Make ``provider``'s env available and hold it; return its name and keys.

        The caller holds the env until it calls :meth:`release` with its
        name. With ``should_stop`` or ``timeout``, the build is waited for
        in steps: :class:`~kit.cluster._bounded.SetupCancelled` once ``should_stop()``
        is true, :class:`~kit.errors.ProviderSetupError` after ``timeout`` seconds.
        """
        name = provider.env_name()
        label = type(provider).__qualname__
        hold = uuid.uuid4().hex
        with self._lock:
            # Runs attaching one env at once (a sweep's trials) wait for the first to
            # build it: a second registration returns before the workers have the env.
            building = self._building.setdefault(name, threading.Lock())
        built = provider.for_env()
        if self.client is None:
            return name, self._attach_inline(built, name, hold, label, should_stop, timeout)
        with building:
            return name, self._attach_cluster(built, name, hold, label, should_stop, timeout)

    def release(self, name: str) -> None:
        """Say a run that attached env ``name`` no longer needs it (it may be torn down)."""
        with self._lock:
            holds = self._holds.get(name)
            if not holds:
                return
            hold = holds.pop()
            if not holds:
                del self._holds[name]
            if self.client is None:
                self._ledger.release(hold, time.monotonic())
                return
        self._release_on_cluster(hold)

    def close(self) -> None:
        """Tear down every inline env with its provider's ``teardown_env``."""
        while self._local:
            _, (provider, env) = self._local.popitem()
            label = type(provider).__qualname__
            _teardown(provider, env, label, "its env", "the session is closed anyway")

    def _took(self, name: str, hold: str) -> None:
        with self._lock:
            self._holds.setdefault(name, []).append(hold)

    def _attach_inline(
        self,
        provider: EnvironmentProvider,
        name: str,
        hold: str,
        label: str,
        should_stop: Callable[[], bool] | None,
        timeout: float | None,
    ) -> list[str]:
        with self._lock:
            while name in self._ledger.leaving:  # another run of this process tears it down
                self._gone_inline.wait()
            now = time.monotonic()
            stale = self._ledger.expired(now, self._local)
            stale += self._ledger.hold(
                name,
                hold,
                "local",
                now,
                present=set(self._local) - set(stale),
                max_envs=self.max_envs,
                idle_timeout=self.idle_timeout,
            )
            self._holds.setdefault(name, []).append(hold)
            building = self._building[name]
        try:
            self._tear_down_inline(stale, label)
            with building:
                if name not in self._local:
                    env = bounded(
                        functools.partial(_build_local, provider, label),
                        should_stop,
                        timeout,
                        label,
                        on_late=functools.partial(_teardown_late, provider, label),
                    )
                    self._local[name] = (provider, env)
            return sorted(self.local(name))
        except BaseException:
            self.release(name)
            raise

    def _tear_down_inline(self, stale: list[str], label: str) -> None:
        try:
            for old in stale:
                kept = self._local.pop(old, None)
                if kept is not None:
                    _teardown(
                        kept[0], kept[1], label, "the previous env", "the new env is built anyway"
                    )
        finally:
            with self._lock:
                self._ledger.gone(stale)
                self._gone_inline.notify_all()

    def _attach_cluster(
        self,
        provider: EnvironmentProvider,
        name: str,
        hold: str,
        label: str,
        should_stop: Callable[[], bool] | None,
        timeout: float | None,
    ) -> list[str]:
        state = self._hold_on_cluster(name, hold, label)
        try:
            if state["threads"] == 0:
                from kit.cluster._plugin import scheduler_state

                self._wait_for_workers(should_stop=should_stop)
                state = self.client.run_on_scheduler(scheduler_state)
            self.threads = max(1, state["threads"])
            keys = self._keys.get(name)
            if keys is None or name not in state["plugins"]:
                register = functools.partial(_attach_to_cluster, self.client, provider, name, label)
                keys = bounded(register, should_stop, timeout, label)
                self._keys[name] = keys
        except BaseException:
            # A build given up on (cancelled, timed out, failed) goes with the hold, so
            # no later worker retries a broken setup; unless another client's run
            # holds the env meanwhile: then it stays theirs.
            self.release_hold(name, hold, drop=True)
            raise
        return keys

    def _hold_on_cluster(self, name: str, hold: str, label: str) -> dict[str, Any]:
        from kit.cluster._seats import who
        from kit.cluster._shared import ClusterLedger, hold_env

        # Idempotent: the first client of the scheduler adds the ledger, the others
        # keep it (and every hold in it); asked at each attach, as a scheduler that
        # was started again has none.
        self.client.register_plugin(ClusterLedger())
        hold_fn = functools.partial(
            hold_env, name, hold, self.client.id, self.max_envs, self.idle_timeout, who()
        )
        state: dict[str, Any] = self.client.run_on_scheduler(hold_fn)
        self._took(name, hold)
        for failure in state["failures"]:
            _teardown_failed(
                label,
                "the previous env on a worker",
                RuntimeError(failure),
                "the new env is built anyway",
            )
        for old in set(self._keys) - set(state["plugins"]):
            del self._keys[old]
        return state

    def release_hold(self, name: str, hold: str, *, drop: bool = False) -> None:
        """Let go of the hold ``hold`` on ``name``; with ``drop``, it goes if nobody holds it."""
        with self._lock:
            holds = self._holds.get(name, [])
            if hold in holds:
                holds.remove(hold)
            if not holds:
                self._holds.pop(name, None)
        self._release_on_cluster(hold, drop=drop)

    def _release_on_cluster(self, hold: str, *, drop: bool = False) -> None:
        # The client may be gone (the scheduler stopped, the session closed): the
        # scheduler then let go of this client's holds itself.
        from kit.cluster._shared import release_env

        with contextlib.suppress(Exception):
            self.client.run_on_scheduler(functools.partial(release_env, hold, drop))


def _build_local(provider: EnvironmentProvider, label: str) -> Env:
    with reading_env(type(provider)):
        env = provider.build_env_local()
    return check_env(env, label, "build_env_local()")


def _teardown(provider: EnvironmentProvider, env: Env, label: str, what: str, anyway: str) -> None:
    # The env belongs to a run whose outcome is settled, or to a build given up
    # on: its failing teardown must not fail the run going on, nor the close.
    try:
        provider.teardown_env(env)
    except Exception as exc:
        _teardown_failed(label, what, exc, anyway)


def _teardown_failed(label: str, what: str, exc: Exception, anyway: str) -> None:
    said = str(exc).strip().splitlines()
    warnings.warn(
        f"{label}: tearing down {what} failed ({type(exc).__name__}"
        + (f": {said[0]}" if said else "")
        + f"); {anyway}",
        RuntimeWarning,
        stacklevel=4,
    )


def _teardown_late(provider: EnvironmentProvider, label: str, env: Env) -> None:
    _teardown(provider, env, label, "an env built after its run gave up", "nothing else is kept")


#: How long an env's registration waits for its workers to come back after losing one.
LOST_WORKER_WAIT = 120.0


def _built_keys(client: Any, name: str, label: str) -> list[str]:
    """Return env ``name``'s keys once a worker has it built; raise once every worker says why not.

    Workers may go away meanwhile (a sibling trial's env killed them, or this
    one's): the scheduler sends the plugin to the worker its nanny starts
    again, so the workers are asked until one has the env built or all have
    failed to build it.

    Raises
    ------
    ProviderSetupError
        Naming why, when every worker failed to build it (a build that
        killed its worker says memory and the limit), or after
        :data:`LOST_WORKER_WAIT` seconds without a worker that built it.
    """
    from kit.cluster._plugin import env_report, scheduler_state

    deadline = time.monotonic() + LOST_WORKER_WAIT
    failures: list[str] = []
    while time.monotonic() < deadline:
        try:
            reports = list(client.run(env_report, name).values())
        except Exception:  # a worker went away while it was asked (comm errors vary): again
            reports = []
        if any(report["built"] for report in reports):
            return sorted({key for report in reports for key in report["keys"]})
        failures = [report["failure"] for report in reports if report.get("failure")]
        if reports and len(failures) == len(reports):
            break
        with contextlib.suppress(Exception):
            if name not in client.run_on_scheduler(scheduler_state)["plugins"]:
                break  # dropped meanwhile (the run gave up on it)
        time.sleep(0.2)
    raise ProviderSetupError(
        failures[0]
        if failures
        else f"{label}: no worker built the env within {LOST_WORKER_WAIT:.0f} s of a worker "
        "going away while it was registered; see the workers' logs"
    )


def _attach_to_cluster(
    client: Any, provider: EnvironmentProvider, name: str, label: str
) -> list[str]:
    """Register env ``name``'s plugin (a no-op if another run did); return its keys once built.

    A failure raises; the caller lets go of its hold with ``drop``, so the
    scheduler unregisters the env unless another client's run holds it.
    """
    from distributed.comm.core import CommClosedError

    from kit.cluster._exits import ExitRecorder
    from kit.cluster._plugin import ProviderPlugin

    # Before the env: a build that kills its worker is then reported with how it ended.
    with contextlib.suppress(Exception):  # a report less precise, never a failed run
        client.register_plugin(ExitRecorder())
    with reading_env(type(provider)):  # make_worker_setup_fn may read the config here
        setup = functools.partial(env_only_setup, provider.worker_setup_fn(), type(provider))
    plugin = ProviderPlugin(name, label, cloudpickle.dumps(setup), cloudpickle.dumps(provider))
    refused: KitError | None = None
    try:
        client.register_plugin(plugin, name=name)
    except CommClosedError:
        # A worker went away while the plugin was being sent: killed by its own env's
        # build, or by another run's (a sweep's sibling trial) on the same worker. The
        # scheduler keeps the plugin and sends it to the worker its nanny starts again:
        # what the workers say then decides.
        pass
    except ProviderSetupError as exc:
        # Its setup failed on some worker: if others built it, the run goes on there (a
        # chunk on that worker has it built again once, then goes elsewhere).
        refused = exc
    except Exception as exc:
        if isinstance(exc, KitError):
            raise exc.with_traceback(None) from None  # the provider's own ConfigError, say
        raise ProviderSetupError(
            f"{label}: registering the env on the workers failed: {exc!r}"
        ) from exc
    try:
        return _built_keys(client, name, label)
    except ProviderSetupError:
        if refused is not None:
            raise refused.with_traceback(None) from None  # the first worker's traceback
        raise
