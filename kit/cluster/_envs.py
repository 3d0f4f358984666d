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
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import cloudpickle

from kit._errors import KitError
from kit.cluster._bounded import SetupCancelled, bounded
from kit.provider import (
    Env,
    EnvironmentProvider,
    ProviderSetupError,
    check_env,
    env_name_prefix,
    env_only_setup,
    reading_env,
)


class EnvCache:
    """The envs of one session: attach, hold, evict, tear down.

    Parameters
    ----------
    max_envs
        Envs of one provider class kept at most (``parallel.max_envs``).
    client
        The session's Dask client, or None: envs are built in this process.
    wait_for_workers
        Called with ``should_stop`` when a cluster has no worker yet.

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
    ) -> None:
        self.max_envs = max_envs
        self.client = client
        self._wait_for_workers = wait_for_workers
        #: Worker threads counted by the latest attach on a cluster (1 inline).
        self.threads = 1
        # Inline envs with the provider that built them, which tears them down.
        self._local: dict[str, tuple[EnvironmentProvider, Env]] = {}
        # Env keys of the plugins registered here, so a later run with the same
        # provider config costs one scheduler call instead of four.
        self._keys: dict[str, list[str]] = {}
        # Runs holding each env now (never torn down while held), and env names by
        # last use, least recent first: past max_envs, the first idle one goes.
        self._in_use: Counter[str] = Counter()
        self._recent: list[str] = []
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        # Envs one attach is tearing down now: runs attaching other envs at once (a
        # sweep's trials) must not pick them too, or the second teardown finds none.
        self._leaving: set[str] = set()

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
        with self._lock:
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
        with self._lock:
            self._in_use[name] -= 1
            if self._in_use[name] <= 0:
                del self._in_use[name]

    def close(self) -> None:
        """Tear down every inline env with its provider's ``teardown_env``."""
        while self._local:
            _, (provider, env) = self._local.popitem()
            label = type(provider).__qualname__
            _teardown(provider, env, label, "its env", "the session is closed anyway")

    def _stale(self, provider: EnvironmentProvider, name: str, present: list[str]) -> list[str]:
        """Envs of ``provider``'s class to tear down before ``name`` joins them.

        At most ``max_envs`` are kept, the least recently used idle ones going
        first; an env a run holds stays, over the bound if need be. The envs
        returned are claimed: call :meth:`_gone` with them once torn down.
        """
        prefix = env_name_prefix(type(provider))
        with self._lock:
            order = {n: i for i, n in enumerate(self._recent)}
            others = sorted(
                (
                    n
                    for n in present
                    if n.startswith(prefix) and n != name and n not in self._leaving
                ),
                key=lambda n: order.get(n, -1),
            )
            excess = len(others) - (self.max_envs - 1)
            idle = [n for n in others if self._in_use[n] == 0]
            stale = idle[: max(0, excess)]
            for old in stale:
                if old in self._recent:
                    self._recent.remove(old)
            self._leaving.update(stale)
            return stale

    def _gone(self, stale: list[str]) -> None:
        """Say the envs :meth:`_stale` claimed are torn down (or that it was given up)."""
        with self._lock:
            self._leaving.difference_update(stale)

    def _attach_inline(
        self,
        provider: EnvironmentProvider,
        name: str,
        label: str,
        should_stop: Callable[[], bool] | None,
        timeout: float | None,
    ) -> list[str]:
        if name not in self._local:
            stale = self._stale(provider, name, list(self._local))
            try:
                for old in stale:
                    old_provider, old_env = self._local.pop(old)
                    _teardown(
                        old_provider,
                        old_env,
                        label,
                        "the previous env",
                        "the new env is built anyway",
                    )
            finally:
                self._gone(stale)
            env = bounded(
                functools.partial(_build_local, provider, label),
                should_stop,
                timeout,
                label,
                on_late=functools.partial(_teardown_late, provider, label),
            )
            self._local[name] = (provider, env)
        return sorted(self.local(name))

    def _attach_cluster(
        self,
        provider: EnvironmentProvider,
        name: str,
        label: str,
        should_stop: Callable[[], bool] | None,
        timeout: float | None,
    ) -> list[str]:
        from kit.cluster._plugin import scheduler_state

        state = self.client.run_on_scheduler(scheduler_state)
        if state["threads"] == 0:
            self._wait_for_workers(should_stop=should_stop)
            state = self.client.run_on_scheduler(scheduler_state)
        self.threads = max(1, state["threads"])
        keys = self._keys.get(name)
        if keys is None or name not in state["plugins"]:
            stale = self._stale(provider, name, state["plugins"])
            register = functools.partial(
                _attach_to_cluster, self.client, provider, name, label, stale
            )
            try:
                keys = bounded(register, should_stop, timeout, label)
            except (SetupCancelled, ProviderSetupError):
                # Workers still building it drop the env when the build ends.
                drop_plugin(self.client, name)
                raise
            finally:
                self._gone(stale)
            for old in stale:
                self._keys.pop(old, None)
            self._keys[name] = keys
        return keys


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
    drop_plugin(client, name)
    raise ProviderSetupError(
        failures[0]
        if failures
        else f"{label}: no worker built the env within {LOST_WORKER_WAIT:.0f} s of a worker "
        "going away while it was registered; see the workers' logs"
    )


def drop_plugin(client: Any, name: str) -> None:
    """Unregister plugin ``name`` if the scheduler has it.

    Unregistering one it does not have makes the scheduler log an ERROR with
    a traceback, beside the clear error the run already gives.
    """
    from kit.cluster._plugin import scheduler_state

    with contextlib.suppress(Exception):
        if name in client.run_on_scheduler(scheduler_state)["plugins"]:
            client.unregister_worker_plugin(name)


def _attach_to_cluster(
    client: Any, provider: EnvironmentProvider, name: str, label: str, stale: list[str]
) -> list[str]:
    from distributed.comm.core import CommClosedError

    from kit.cluster._plugin import ProviderPlugin

    for old in stale:
        try:
            client.unregister_worker_plugin(old)
        except (ValueError, CommClosedError):
            # Gone already (another client of a shared scheduler removed it), or a
            # worker went away meanwhile, and its env with it.
            pass
        except Exception as exc:
            # A worker's teardown_env raised. The plugin is gone from the scheduler and
            # the workers all the same; the env being attached (another run's, another
            # trial's) must not fail for it: a warning, as inline.
            _teardown_failed(
                label, "the previous env on a worker", exc, "the new env is built anyway"
            )
    with reading_env(type(provider)):  # make_worker_setup_fn may read the config here
        setup = functools.partial(env_only_setup, provider.worker_setup_fn(), type(provider))
    plugin = ProviderPlugin(name, label, cloudpickle.dumps(setup), cloudpickle.dumps(provider))
    try:
        client.register_plugin(plugin, name=name)
    except CommClosedError:
        # A worker went away while the plugin was being sent: killed by its own env's
        # build, or by another run's (a sweep's sibling trial) on the same worker. The
        # scheduler keeps the plugin and sends it to the worker its nanny starts again:
        # what the workers say then decides.
        pass
    except Exception as exc:
        # Leave nothing half-registered: a later worker must not retry a broken setup.
        drop_plugin(client, name)
        if isinstance(exc, KitError):
            raise exc.with_traceback(None) from None  # the provider's own ConfigError, say
        raise ProviderSetupError(
            f"{label}: registering the env on the workers failed: {exc!r}"
        ) from exc
    return _built_keys(client, name, label)
