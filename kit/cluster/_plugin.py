"""The worker side of providers: a Dask WorkerPlugin holding the env, and the chunk task."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import re
import secrets
import threading
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import cloudpickle
from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from kit._base.errors import EnvMissing, KitError
from kit.provider import ProviderSetupError, check_env

#: The scheduler's event topic where workers say what an env's build took in memory.
ENV_EVENT = "kit-env-built"
#: Held while a task builds a missing env again (one at a time in a worker process).
_REBUILDING = threading.Lock()
#: Held while a worker process builds an env suspected of killing its last process.
_SUSPECTS = threading.Lock()
_TOKENS: dict[int, str] = {}


def _process() -> str:
    """Name this process in build markers: its pid and a token (a later one may reuse the pid).

    Examples
    --------
    >>> _process() == _process() and _process().startswith(f"{os.getpid()}-")
    True
    """
    pid = os.getpid()  # per pid, so a forked child does not speak as its parent
    return _TOKENS.setdefault(pid, f"{pid}-{secrets.token_hex(4)}")


class ProviderPlugin(WorkerPlugin):
    """Build a provider's env once per worker process and keep it for tasks.

    ``idempotent``: registering a plugin of the same name again (the same
    provider class and config) keeps the env already built.
    """

    idempotent = True

    def __init__(self, name: str, label: str, setup: bytes, provider: bytes) -> None:
        self.name = name
        self.label = label
        # Pickled by value with cloudpickle on the driver, so providers and
        # setup functions defined in a notebook (__main__) reach the workers.
        self._setup = setup
        self._provider = provider
        self.env: dict[str, Any] | None = None
        self.builds = 0
        self.removed = False
        #: Whether a task has had the env built again on this worker (once, at most).
        self.rebuilt = False
        #: Why the env is not built on this worker (its setup failed), or None.
        self.failure: str | None = None

    async def setup(self, worker: Any) -> None:
        """Build the env on a thread; wrap any failure with the provider and worker named.

        On a thread, so the worker goes on answering the scheduler (heartbeats,
        a plugin removed because the run gave up on a setup) while a model
        loads. Before the setup function runs, the process environment says
        which worker this is (``KIT_WORKER_INDEX``, and ESPnet3's
        ``DASK_WORKER_ID``), e.g. for choosing a device per worker, and how
        many threads it runs tasks on (``KIT_WORKER_THREADS``): a model that
        takes a thread pool of its own sizes it to that, not to every core
        of a machine its sibling workers share.
        """
        os.environ["DASK_WORKER_ID"] = str(worker.id)
        os.environ["KIT_WORKER_INDEX"] = str(worker_index(worker.name))
        os.environ["KIT_WORKER_THREADS"] = str(worker.state.nthreads)
        # Set once this setup has ended, built or not: a task that finds no env waits for it
        # (made here, not in __init__: the plugin is pickled before it reaches the worker).
        self.settled = threading.Event()
        before = _resident()
        try:
            env = await _on_daemon_thread(functools.partial(self._build, worker), self.label)
        except BaseException as exc:
            self.failure = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            self.settled.set()
            raise
        if self.removed:  # the run gave up waiting and unregistered the plugin
            self._release(env)
            self.settled.set()
            return
        self.env = env
        self.builds += 1
        self.settled.set()
        # What the process grew by while it built the env (other threads' work included, so
        # about): the teacher's listing reads it from the scheduler's events, no worker asked.
        worker.log_event(ENV_EVENT, {"env": self.name, "memory": max(0, _resident() - before)})

    def _build(self, worker: Any) -> dict[str, Any]:
        marker = build_marker(worker, self.name)
        died = _marked(marker)
        if died is None:
            return self._marked_build(worker, marker)
        # This worker's last process died while this env was being built (its nanny
        # started it again). Alone in its build then: it killed the process, and
        # building it again would kill this one and every restart after.
        if died[1] == "building" and _suspects(marker, died[0]) == [marker.name]:
            raise ProviderSetupError(died_building(worker, self.label))
        # Other envs were being built too: the suspects are built again one at a time,
        # so that the next death, if any, has one env to blame.
        marker.write_text(f"{_process()} waiting")
        with _SUSPECTS:
            return self._marked_build(worker, marker)

    def _marked_build(self, worker: Any, marker: Path) -> dict[str, Any]:
        marker.parent.mkdir(mode=0o700, exist_ok=True)
        marker.write_text(f"{_process()} building")
        try:
            return self._setup_env(worker)
        finally:
            marker.unlink(missing_ok=True)  # only a process killed mid-build leaves it

    def _setup_env(self, worker: Any) -> dict[str, Any]:
        try:
            fn = cloudpickle.loads(self._setup)
            return check_env(fn(), self.label, "the worker setup function")
        except KitError:
            raise  # already says what is wrong and how to fix it (a provider's ConfigError)
        except Exception as exc:
            text = "".join(traceback.format_exception(exc))
            raise ProviderSetupError(
                f"{self.label}: building the env failed on worker {worker.name} "
                f"({worker.address}):\n{text}"
            ) from None

    def rebuild_once(self, worker: Any) -> None:
        """Build the env again on this worker, the first time a task finds it missing.

        Its setup failed here (or its build was lost): once, not per item,
        and on the task's thread (one task at a time: others wait for it).
        A second miss is final for this worker process.
        """
        with _REBUILDING:
            if self.env is not None or self.rebuilt or self.removed:
                return
            self.rebuilt = True
            try:
                self.env = self._build(worker)
            except Exception as exc:
                said = str(exc).strip().splitlines()
                self.failure = said[0] if said else repr(exc)
                return
            self.failure = None
            self.builds += 1

    def teardown(self, worker: Any) -> None:
        """Release the env through the provider's ``teardown_env``."""
        self.removed = True
        settled = getattr(self, "settled", None)
        if settled is not None:
            settled.set()  # no task waits on a build that will not be kept
        # Unregistered: a later registration of the env may try to build it again.
        build_marker(worker, self.name).unlink(missing_ok=True)
        env, self.env = self.env, None
        if env is not None:
            self._release(env)

    def _release(self, env: dict[str, Any]) -> None:
        provider = cloudpickle.loads(self._provider)
        provider.teardown_env(env)


def _resident() -> int:
    """Return this process's resident memory in bytes."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def build_marker(worker: Any, name: str) -> Path:
    """Return the file that says env ``name`` is being built by this worker's process.

    It outlives the process (in the folder Dask gives the cluster's workers),
    and is named by the scheduler, the worker's nanny (the same across the
    worker's restarts) and the env.
    """
    who = f"{worker.scheduler.address}|{getattr(worker, 'nanny', None) or worker.name}|{name}"
    digest = hashlib.sha256(who.encode()).hexdigest()[:24]
    return Path(worker.local_directory).parent / "kit-env-builds" / digest


def died_building(worker: Any, label: str) -> str:
    """Say that a worker's process died building ``label``'s env, and how, as its nanny saw it.

    Memory is named only when the nanny says it stopped the process for
    passing the memory limit; an exit code or a signal is named as such.
    """
    from kit.cluster._exits import how_it_ended, last_exit

    how, memory = how_it_ended(last_exit(worker))
    said = (
        f"{label}: worker {worker.name}'s process {how} while building the env; it is not "
        "built again on this worker."
    )
    if memory:
        return (
            f"{said} Give each worker more memory (parallel.options.memory_limit, or the "
            "job's memory on a cluster), fewer threads or processes per machine, or make the "
            "env smaller"
        )
    return (
        f"{said} Build it in this process (parallel.env: inline) to see what its setup does, "
        "or read the worker's log"
    )


def _marked(marker: Path) -> tuple[str, str] | None:
    """Return a build marker's process id and state (``building``, ``waiting``), or None."""
    try:
        pid, state = marker.read_text().split()
    except (OSError, ValueError):
        return None
    return pid, state


def _suspects(marker: Path, pid: str) -> list[str]:
    """Return the markers of the envs process ``pid`` was building when it died, as first seen.

    The first env to look after the death lists them and keeps the list; every
    other env of that death reads the same list. Listing again would race: a
    suspect that looked first has already marked itself anew (``waiting``), or
    even finished and removed its marker, and a sibling that looked then would
    seem to have been built alone, and be blamed for a death it did not cause.
    """
    record = marker.parent / f"died-{pid}"
    with contextlib.suppress(FileNotFoundError):
        return record.read_text().split()
    seen = sorted(m.name for m in marker.parent.iterdir() if _marked(m) == (pid, "building"))
    draft = marker.parent / f".died-{pid}.{_process()}.{threading.get_ident()}"
    draft.write_text(" ".join(seen))
    try:
        os.link(draft, record)  # the first list kept wins; a later one is dropped
    except FileExistsError:
        pass
    finally:
        draft.unlink()
    return record.read_text().split()


async def _on_daemon_thread(fn: Callable[[], Any], label: str) -> Any:
    """Await ``fn()`` run on a daemon thread of its own.

    Not the loop's executor: its threads are joined when the process exits,
    so a setup that never returns would keep the worker from closing.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value, error = fn(), None
        except BaseException as exc:
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the worker's loop closed meanwhile
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"kit-setup-{label}", daemon=True).start()
    return await future


def worker_index(name: Any) -> int:
    """Return the number in a worker's name: ``0``, ``1``... or ``SLURMCluster-3`` -> 3.

    -1 when the name holds no number (a ``dask worker`` named by its address).

    Examples
    --------
    >>> worker_index(2), worker_index("SLURMCluster-3"), worker_index("SLURMCluster-3-1")
    (2, 3, 3)
    >>> worker_index("tcp://127.0.0.1:40000")
    -1
    """
    if isinstance(name, int):
        return name
    match = re.fullmatch(r"(?:.*?-)?(\d+)(?:-\d+)?", str(name))
    return int(match.group(1)) if match else -1


def worker_env(name: str) -> Mapping[str, Any]:
    """Return the env named ``name`` on the current worker, built again once if missing.

    Raises
    ------
    EnvMissing
        Naming why, when the env is not on this worker even after that.
    """
    worker = get_worker()
    plugin = worker.plugins.get(name)
    if isinstance(plugin, ProviderPlugin) and plugin.env is None:
        settled = getattr(plugin, "settled", None)
        if settled is not None:
            settled.wait()  # its setup may still be building it (a chunk sent early)
        plugin.rebuild_once(worker)
    if not isinstance(plugin, ProviderPlugin) or plugin.env is None:
        why = plugin.failure if isinstance(plugin, ProviderPlugin) else None
        raise EnvMissing(
            f"the env {name!r} is not built on worker {worker.name} ({worker.address}); "
            + (why or "its setup may have failed when the worker started: see the worker's log"),
            worker=worker.address,
        )
    return plugin.env


def env_report(name: str, dask_worker: Any) -> dict[str, Any]:
    """For ``client.run``: the env's keys and build count on one worker."""
    plugin = dask_worker.plugins.get(name)
    if not isinstance(plugin, ProviderPlugin) or plugin.env is None:
        failure = plugin.failure if isinstance(plugin, ProviderPlugin) else None
        return {"built": False, "keys": [], "builds": 0, "failure": failure}
    return {"built": True, "keys": sorted(plugin.env), "builds": plugin.builds, "failure": None}


def scheduler_state(dask_scheduler: Any) -> dict[str, Any]:
    """For ``client.run_on_scheduler``: registered worker plugins and worker threads."""
    return {
        "plugins": list(dask_scheduler.worker_plugins),
        "threads": sum(ws.nthreads for ws in dask_scheduler.workers.values()),
    }
