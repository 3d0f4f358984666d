"""A pool of processes that each step several envs, exchanging data through shared memory.

One pipe round trip and one process wake-up cost far more than a step of a
small env such as CartPole. :class:`SharedMemoryPool` runs ``envs_per_process``
envs in each process, steps those commanded together as one batch, and
passes observations, rewards, flags and actions through numpy views on a
:class:`multiprocessing.shared_memory.SharedMemory` block; the pipe carries
only which envs to step and the little that does not fit the block (infos,
errors, observations or actions of other shapes or types, which still work).

Faults are handled per env, as in the other pools: an exception in one env
rebuilds that env alone; a process that dies or hangs is restarted with all
its envs, and every episode it broke is reported: the envs with a command in
flight answer with the fault, and the others answer their next step with it
(``"env_error"``, "rebuilt with its process"). Nothing is silently lost.
"""

from __future__ import annotations

import contextlib
import functools
import math
import multiprocessing
import os
import pickle
import secrets
import select
import signal
import time
import traceback
import weakref
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import cloudpickle
import numpy as np

from kit._base.errors import NothingPendingError
from kit.rl import _protocol as protocol
from kit.rl._protocol import GroupAnswer, GroupCommand
from kit.rl._types import ENV_ERROR, TIMEOUT, EnvState, EnvStatus
from kit.rl.pool import WorkerPool
from kit.rl.workers import (
    DEFAULT_CONTEXT,
    EnvFn,
    EnvSlot,
    _close_quietly,
    _kill,
    _seeds,
    build_env,
    start_process,
    stepped,
)

__all__ = ["SharedMemoryPool"]


def _layout(envs: list[Any], n: int) -> dict[str, Any]:
    """Lay out a block: rewards and flags, then observations and actions if they fit.

    They fit when every env built has the same fixed-shape numeric space.
    """

    def fixed(spaces: list[Any]) -> tuple[tuple[int, ...], np.dtype[Any]] | None:
        shapes = {getattr(s, "shape", None) for s in spaces}
        dtypes = {getattr(s, "dtype", None) for s in spaces}
        if len(shapes) != 1 or len(dtypes) != 1:
            return None
        shape, dtype = shapes.pop(), dtypes.pop()
        if not isinstance(shape, tuple) or dtype is None:
            return None
        dtype = np.dtype(dtype)
        return (shape, dtype) if dtype.kind in "biuf" else None

    built = [env for env in envs if env is not None]
    obs = fixed([getattr(env, "observation_space", None) for env in built]) if built else None
    act = fixed([getattr(env, "action_space", None) for env in built]) if built else None
    offset = 10 * n  # float64 rewards, then terminated and truncated flags
    spec: dict[str, Any] = {"obs": None, "act": None}
    for key, found in (("obs", obs), ("act", act)):
        if found is not None:
            shape, dtype = found
            offset = -(-offset // 8) * 8
            spec[key] = (shape, dtype.str, offset)
            offset += n * int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    spec["size"] = max(offset, 1)
    return spec


class _Views:
    """Numpy views on a block laid out by :func:`_layout`."""

    def __init__(self, block: SharedMemory, spec: dict[str, Any], n: int) -> None:
        buf = block.buf
        self.reward = np.ndarray((n,), np.float64, buf, 0)
        self.terminated = np.ndarray((n,), np.bool_, buf, 8 * n)
        self.truncated = np.ndarray((n,), np.bool_, buf, 9 * n)
        self.obs: np.ndarray[Any, Any] | None = None
        self.act: np.ndarray[Any, Any] | None = None
        if spec["obs"] is not None:
            shape, dtype, offset = spec["obs"]
            self.obs = np.ndarray((n, *shape), np.dtype(dtype), buf, offset)
        if spec["act"] is not None:
            shape, dtype, offset = spec["act"]
            self.act = np.ndarray((n, *shape), np.dtype(dtype), buf, offset)

    def release(self) -> None:
        self.reward = self.terminated = self.truncated = None  # type: ignore[assignment]
        self.obs = self.act = None


def _serve_group(conn: Connection, payload: bytes, n: int, name: str) -> None:
    """Run one process of a :class:`SharedMemoryPool`: build ``n`` envs, answer batches."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the parent
    build = functools.partial(build_env, cloudpickle.loads(payload))
    envs: list[Any] = []
    errors: list[str | None] = []
    for _ in range(n):
        env, error = build()
        envs.append(env)
        errors.append(error)
    spec = _layout(envs, n)
    # The parent chose the name, so it can free the block even if this process dies
    # before saying it exists.
    block = SharedMemory(name=name, create=True, size=spec["size"])
    views = _Views(block, spec, n)
    try:
        conn.send(protocol.ready(spec))
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message[0] == protocol.CLOSE:
                return
            answers: list[GroupAnswer] = []
            for i, kind, arg in message[1]:
                if kind == protocol.REBUILD:
                    _close_quietly(envs[i])
                    envs[i], errors[i] = build()
                    conn.send(protocol.rebuilt())
                    continue
                env = envs[i]
                if env is None:
                    answers.append(
                        (i, protocol.SENT_ENV_ERROR, False, None, None, _build_failed(errors[i]))
                    )
                    continue
                answers.append(_answer(env, i, kind, arg, views))
            if answers:
                try:
                    conn.send(protocol.answers(answers))
                except (BrokenPipeError, OSError):
                    return  # the parent gave up on this process
                except Exception:  # an observation or info cannot be pickled
                    conn.send(protocol.answers([_picklable(answer) for answer in answers]))
    finally:
        for env in envs:
            _close_quietly(env)
        views.release()
        block.close()
        conn.close()


def _answer(env: Any, i: int, kind: int, arg: Any, views: _Views) -> GroupAnswer:
    """Reset or step env ``i`` as ``kind`` asks; its observation goes to the block if it fits."""
    obs_view, act_view = views.obs, views.act
    try:
        if kind == protocol.RESET:
            obs, info = env.reset(seed=arg[0], options=arg[1])
            status = protocol.SENT_RESET
            views.reward[i] = 0.0
            views.terminated[i] = views.truncated[i] = False
        else:
            action = arg
            if kind == protocol.STEP_SHARED:
                assert act_view is not None
                action = act_view[i].item() if act_view.ndim == 1 else act_view[i].copy()
            answer = stepped(env.step(action))
            obs, info, status = answer.obs, answer.info, protocol.SENT_STEPPED
            views.reward[i] = answer.reward
            views.terminated[i] = answer.terminated
            views.truncated[i] = answer.truncated
    except Exception:
        return (i, protocol.SENT_ENV_ERROR, False, None, None, traceback.format_exc())
    if (
        obs_view is not None
        and type(obs) is np.ndarray
        and obs.shape == obs_view.shape[1:]
        and obs.dtype == obs_view.dtype
    ):
        obs_view[i] = obs
        return (i, status, True, None, info or None, None)
    return (i, status, False, obs, info or None, None)


def _build_failed(error: str | None) -> str:
    return f"building the env failed:\n{error}"


def _picklable(answer: GroupAnswer) -> GroupAnswer:
    try:
        pickle.dumps(answer)
    except Exception:
        return (answer[0], protocol.SENT_ENV_ERROR, False, None, None, traceback.format_exc())
    return answer


def _stop(process: Any, conn: Connection | None, block: SharedMemory | None, name: str) -> None:
    """Kill a group's process and free its block (also when the pool is garbage-collected)."""
    if conn is not None:
        conn.close()
    _kill(process)
    if block is None:
        try:  # made by the process, never attached here
            block = SharedMemory(name=name)
        except (FileNotFoundError, ValueError):
            return
    with contextlib.suppress(FileNotFoundError):
        block.unlink()
    with contextlib.suppress(BufferError):
        block.close()


class _Group:
    """One process of the pool and its envs ``first`` to ``first + n - 1``."""

    def __init__(self, payload: bytes, first: int, n: int, context: str) -> None:
        self.payload, self.first, self.n, self.context = payload, first, n, context
        self.process: Any = None
        self.conn: Connection | None = None
        self.block: SharedMemory | None = None
        self.views: _Views | None = None
        self.queued: list[GroupCommand] = []
        #: Envs whose episode was broken by a restart of the process, with the reason.
        self.broken: dict[int, str] = {}
        self.closed: set[int] = set()
        self.ready = False
        self.started_at = self.ready_at = 0.0
        self.rebuilding = 0
        self.start()

    def start(self) -> None:
        self.ready, self.started_at, self.views = False, time.monotonic(), None
        self.name = f"kit-env-{os.getpid()}-{secrets.token_hex(6)}"
        parent, child = multiprocessing.Pipe()
        self.process = start_process(
            self.context,
            _serve_group,
            (child, self.payload, self.n, self.name),
            True,
            parent,
            child,
        )
        self.conn = parent
        self._finalizer = weakref.finalize(self, _stop, self.process, parent, None, self.name)

    def attach(self, spec: dict[str, Any]) -> None:
        self.block = SharedMemory(name=self.name)
        self.views = _Views(self.block, spec, self.n)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, _stop, self.process, self.conn, self.block, self.name
        )
        self.ready, self.ready_at = True, time.monotonic()

    @property
    def alive(self) -> bool:
        return self.process is not None and bool(self.process.is_alive())

    def queue(self, local: int, command: tuple[Any, ...]) -> EnvState | None:
        """Queue ``command`` for env ``local``; an answer now when it cannot be sent."""
        if local in self.closed:
            return EnvState(None, status=ENV_ERROR, error="the env was closed")
        if command[0] == protocol.RESET:
            self.broken.pop(local, None)
            self.queued.append((local, protocol.RESET, command[1:]))
            return None
        if local in self.broken:
            return EnvState(None, status=ENV_ERROR, error=self.broken.pop(local))
        action = command[1]
        act = None if self.views is None else self.views.act
        if act is not None and _fits(action, act):
            act[local] = action
            self.queued.append((local, protocol.STEP_SHARED, None))
        else:
            self.queued.append((local, protocol.STEP, action))
        return None

    def rebuild(self, local: int) -> None:
        self.queued.append((local, protocol.REBUILD, None))
        self.rebuilding += 1
        self.ready, self.started_at = False, time.monotonic()

    def flush(self) -> None:
        if self.queued and self.conn is not None and self.ready_to_send:
            commands, self.queued = self.queued, []
            with contextlib.suppress(BrokenPipeError, OSError):  # its death is seen by poll
                self.conn.send(protocol.run(commands))

    @property
    def ready_to_send(self) -> bool:
        # Before the first READY the action views do not exist yet: hold the commands.
        return self.views is not None

    def state(self, answer: GroupAnswer) -> EnvState:
        local, sent, shared, obs, info, error = answer
        status = protocol.READ[sent]
        if status == ENV_ERROR:
            return EnvState(None, status=ENV_ERROR, error=error)
        views = self.views
        assert views is not None
        if shared:
            assert views.obs is not None
            obs = views.obs[local].copy()
        return EnvState(
            obs,
            float(views.reward[local]),
            bool(views.terminated[local]),
            bool(views.truncated[local]),
            info or {},
            status,
        )

    def stop(self, kill: bool, cleanup_time: float) -> None:
        conn, self.conn = self.conn, None
        if conn is not None and not kill:
            with contextlib.suppress(BrokenPipeError, OSError):
                conn.send(protocol.close())
            self.process.join(cleanup_time)
        if self.views is not None:
            self.views.release()
            self.views = None
        block, self.block = self.block, None
        self._finalizer.detach()
        _stop(self.process, conn, block, self.name)
        self.queued = []

    def death(self) -> str:
        self.process.join(1)
        code = self.process.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"the env process died by signal {signal.Signals(-code).name}"
        return f"the env process exited (exit code {code})"


def _fits(action: Any, act: np.ndarray[Any, Any]) -> bool:
    if act.ndim == 1:
        kind = act.dtype.kind
        if kind in "iu":
            return type(action) is int or isinstance(action, np.integer)
        return type(action) is float or isinstance(action, np.floating | np.integer | int)
    return type(action) is np.ndarray and action.shape == act.shape[1:]


class _GroupEnv(EnvSlot):
    """One env of a group, as the pool's slot (what ``pool.workers[i]`` holds).

    It has no ``get_state``: a group's envs answer together, through the pool's ``recv``.
    """

    def __init__(self, env_fn: EnvFn, seed: int | None, group: _Group, local: int) -> None:
        super().__init__(env_fn, seed)
        self.group, self.local = group, local
        self.instant: EnvState | None = None

    def _send(self, command: tuple[Any, ...]) -> None:
        self.instant = self.group.queue(self.local, command)

    def restart(self, hard: bool = False) -> None:
        self.group.rebuild(self.local)

    @property
    def ready(self) -> bool:  # type: ignore[override]
        return self.group.ready

    @property
    def started_at(self) -> float:  # type: ignore[override]
        return self.group.started_at

    @property
    def ready_at(self) -> float:  # type: ignore[override]
        return self.group.ready_at

    @property
    def alive(self) -> bool:
        return self.group.alive

    def cleanup(self) -> None:
        self.group.closed.add(self.local)


class SharedMemoryPool(WorkerPool):
    """``num_envs`` envs in processes of ``envs_per_process`` each, stepped in batches.

    Observations, rewards, flags and actions pass through shared memory;
    answers come back a process's batch at a time, in completion order, so
    a collector acts on one process's envs while the other processes step.

    Parameters
    ----------
    env_fn
        Zero-argument factory of one env (sent to the processes with cloudpickle).
    num_envs
        Number of envs (slots 0 to ``num_envs - 1``).
    envs_per_process
        Envs in each process; None: spread over one process per CPU.
    seed
        Seeds each env's first reset (distinct seeds spawned from it).
    context
        Multiprocessing start method (default ``"forkserver"`` where there is one).
    step_timeout, build_timeout, max_restarts
        As for every :class:`WorkerPool`. A process that hangs or dies is
        restarted with its envs and counts as one rebuild.

    Examples
    --------
    >>> import functools
    >>> from kit.rl import gym_env
    >>> with SharedMemoryPool(functools.partial(gym_env, "CartPole-v1"), 4,
    ...                       envs_per_process=2) as pool:
    ...     pool.reset()
    ...     states, slots = pool.recv(batch_size=4, timeout=60)
    ...     pool.send([0, 1, 0, 1], [0, 1, 2, 3])
    ...     states, slots = pool.recv(batch_size=4, timeout=60)
    ...     sorted(slots), states[0].obs.shape, states[0].reward
    ([0, 1, 2, 3], (4,), 1.0)
    """

    mode = "shared_memory"
    mode_reason = "asked for"
    workers: Sequence[_GroupEnv]

    def __init__(
        self,
        env_fn: EnvFn,
        num_envs: int,
        *,
        envs_per_process: int | None = None,
        seed: int | None = 0,
        context: str | None = None,
        cleanup_time: float = 5.0,
        **kwargs: Any,
    ) -> None:
        if not callable(env_fn):
            raise TypeError(
                f"env_fn must be a zero-argument callable that builds an env, got "
                f"{type(env_fn).__name__}"
            )
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if envs_per_process is None:
            envs_per_process = math.ceil(num_envs / max(1, min(os.cpu_count() or 1, num_envs)))
        if envs_per_process < 1:
            raise ValueError(f"envs_per_process must be at least 1, got {envs_per_process}")
        self.envs_per_process = envs_per_process
        self.cleanup_time = cleanup_time
        payload = cloudpickle.dumps(env_fn)
        context = context or DEFAULT_CONTEXT
        self.groups: list[_Group] = []
        workers: list[_GroupEnv] = []
        seeds = _seeds(seed, num_envs)
        try:
            for first in range(0, num_envs, envs_per_process):
                n = min(envs_per_process, num_envs - first)
                group = _Group(payload, first, n, context)
                self.groups.append(group)
                workers += [_GroupEnv(env_fn, seeds[first + i], group, i) for i in range(n)]
        except BaseException:
            for group in self.groups:
                group.stop(kill=True, cleanup_time=0)
            raise
        super().__init__(workers, **kwargs)
        self._poller = select.poll()
        self._group_of: dict[int, _Group] = {}
        for group in self.groups:
            self._watch(group)
        #: Slots whose fault was already handled by restarting their process.
        self._handled: set[int] = set()
        self._instant: list[int] = []

    @property
    def num_processes(self) -> int:
        """Number of env processes."""
        return len(self.groups)

    def _watch(self, group: _Group) -> None:
        assert group.conn is not None
        fd = group.conn.fileno()
        self._group_of[fd] = group
        self._poller.register(fd, select.POLLIN)

    def _unwatch(self, group: _Group) -> None:
        for fd, watched in list(self._group_of.items()):
            if watched is group:
                del self._group_of[fd]
                self._poller.unregister(fd)

    def _sent(self, slot: int) -> None:
        worker = self.workers[slot]
        if worker.instant is not None:
            self._instant.append(slot)

    def _wait(self, timeout: float | None, everything: bool) -> list[tuple[EnvState, int]]:
        if not self._pending:
            raise NothingPendingError("get_state() with nothing in flight: send an action first")
        workers = self.workers
        if self._instant:
            slots, self._instant = self._instant, []
            out = []
            for slot in slots:
                state, workers[slot].instant = workers[slot].instant, None
                assert state is not None
                self._handled.add(slot)  # broken by an earlier restart, counted then
                out.append(self._receive(slot, state))
            return out
        for group in self.groups:
            group.flush()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            limit = None if deadline is None else max(0.0, deadline - time.monotonic())
            expired, limit = self._clock(limit)
            if expired:
                slot = expired[0]
                group = workers[slot].group
                return self._restart(group, TIMEOUT, self._timed_out(slot).error or "", slot)
            events = self._poller.poll(None if limit is None else limit * 1000)
            out = []
            for fd, _ in events:
                answering = self._group_of.get(fd)
                if answering is not None:
                    out += self._read(answering)
            if out:
                return out
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"no env answered within {timeout:g} s")

    def _read(self, group: _Group) -> list[tuple[EnvState, int]]:
        assert group.conn is not None
        try:
            message = group.conn.recv()
        except (EOFError, OSError):
            return self._restart(group, ENV_ERROR, group.death(), None)
        if message[0] == protocol.READY:
            group.attach(message[1])
            group.flush()
            return []
        if message[0] == protocol.REBUILT:
            group.rebuilding -= 1
            if group.rebuilding == 0:
                group.ready, group.ready_at = True, time.monotonic()
            return []
        out = []
        for answer in message[1]:
            slot = group.first + answer[0]
            if slot in self._pending:
                out.append(self._receive(slot, group.state(answer)))
        return out

    def _restart(
        self, group: _Group, status: EnvStatus, error: str, culprit: int | None
    ) -> list[tuple[EnvState, int]]:
        """Restart a dead or hung process with all its envs; report every episode it broke."""
        what = "died" if culprit is None else f"hung ({error})"
        self._unwatch(group)
        group.stop(kill=True, cleanup_time=0)
        first_slot = group.first if culprit is None else culprit
        self._count_restart(first_slot, EnvState(None, status=status, error=error))
        group.broken.clear()
        group.start()
        self._watch(group)
        out = []
        for local in range(group.n):
            slot = group.first + local
            if local in group.closed:
                continue
            reason = (
                error
                if slot == culprit or culprit is None
                else f"env {slot} was rebuilt with its process: env {culprit} {what}"
            )
            if slot in self._pending:
                self._handled.add(slot)
                out.append(self._receive(slot, EnvState(None, status=status, error=reason)))
            else:
                group.broken[local] = (
                    f"env {slot} was rebuilt with its process, which {what}: its episode "
                    f"is lost; reset it ({error})"
                )
        return out

    def _fault(self, slot: int, state: EnvState) -> None:
        if slot in self._handled:  # its process was restarted, and that was counted
            self._handled.discard(slot)
            self.faults.append((slot, state.status, state.error or state.status))
            return
        super()._fault(slot, state)  # an exception inside one env: rebuild it alone

    def cleanup(self) -> None:
        """Close every env and stop every process (killing those with a command in flight)."""
        busy = {self.workers[slot].group for slot in self._pending}
        for group in self.groups:
            if group.conn is not None and group not in busy:
                with contextlib.suppress(BrokenPipeError, OSError):
                    group.conn.send(protocol.close())
        for group in self.groups:
            self._unwatch(group)
            group.stop(kill=group in busy, cleanup_time=self.cleanup_time)
        self._pending.clear()
        self._answered.clear()
        self._instant.clear()
        self.closed = True
