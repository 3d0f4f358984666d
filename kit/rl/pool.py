"""Pools of env workers: answers in completion order, batched recv/send, fault recovery.

A fault in one env (an exception, a hang past ``step_timeout``, a crashed
process) does not stop the pool: the slot is rebuilt from its factory, the
fault comes back as that slot's state (status ``"env_error"`` or
``"timeout"``, with the reason), and the other envs go on. Rebuilds are
counted against ``max_restarts``; when the budget is spent the pool raises
:class:`EnvPoolError` naming the env and the last error.
"""

from __future__ import annotations

import abc
import select
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from kit._base.errors import AlreadyPendingError, ClosedPoolError, EnvPoolError, NothingPendingError
from kit.rl._deadlines import Deadlines, shorter
from kit.rl._names import renamed
from kit.rl._types import FAULTS, TIMEOUT, EnvState, EnvStatus
from kit.rl.workers import AsyncEnvWorker, BaseEnvWorker, EnvSlot, SyncEnvWorker, names_command

__all__ = ["AsyncWorkerPool", "EnvState", "EnvStatus", "SyncWorkerPool", "WorkerPool"]


class WorkerPool(abc.ABC):
    """Envs addressed by their index, 0 to ``num_envs - 1`` (gymnasium's names).

    ml-starter's ``worker_id`` keyword is an alias of ``env_index``.

    Parameters
    ----------
    workers
        The env workers, one per slot.
    step_timeout
        Seconds a command may take before its env counts as hung (async
        workers). The clock starts once the env is built: a slow start-up is
        not a hang.
    build_timeout
        Seconds an async worker's env may take to build (at start and after
        every rebuild) before it counts as hung; None: no bound.
    max_restarts
        Env rebuilds allowed over the pool's life (None: no limit).

    Examples
    --------
    >>> from kit.rl.workers import SyncEnvWorker
    >>> import gymnasium as gym
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2))
    >>> isinstance(pool, WorkerPool), pool.num_envs
    (True, 2)
    """

    #: How the envs are stepped (see :func:`kit.rl.choose.get_worker_pool`), and why.
    mode: str = "workers"
    mode_reason: str = "built from the workers given"

    def __init__(
        self,
        workers: Sequence[EnvSlot],
        *,
        step_timeout: float | None = None,
        build_timeout: float | None = 300.0,
        max_restarts: int | None = 10,
    ) -> None:
        if not workers:
            raise ValueError("a pool needs at least one worker")
        self.workers: Sequence[EnvSlot] = list(workers)
        #: When a command counts as hung: its env's build, then its step.
        self.deadlines = Deadlines(step_timeout, build_timeout)
        self.max_restarts = max_restarts
        self.restarts = [0] * len(self.workers)
        #: Every fault seen: (slot, status, error text).
        self.faults: list[tuple[int, str, str]] = []
        self._pending: dict[int, float] = {}  # slot -> when its command was sent
        self._answered: deque[tuple[EnvState, int]] = deque()
        #: Whether :meth:`cleanup` ended the pool: it takes no command after that.
        self.closed = False

    @property
    def num_envs(self) -> int:
        """Number of slots."""
        return len(self.workers)

    @property
    def pending(self) -> list[int]:
        """Envs with a command whose answer the caller has not received yet."""
        return [*self._pending, *(slot for _, slot in self._answered)]

    def _check_open(self) -> None:
        """Refuse a command to a closed pool, the same way whatever its mode."""
        if self.closed:
            raise ClosedPoolError(
                "this pool is closed (cleanup() or close() ended its envs): make a new pool "
                "to step envs again"
            )

    def _check_free(self, env_index: int) -> None:
        self._check_open()
        if not 0 <= env_index < len(self.workers):
            raise IndexError(f"no env {env_index}: the pool has envs 0 to {len(self.workers) - 1}")
        if env_index in self._pending:
            raise AlreadyPendingError(
                f"env {env_index} already has a command in flight: get_state()/recv() its "
                "answer before sending another"
            )

    def send_step(self, action: Any, env_index: int) -> None:
        """Step env ``env_index`` with ``action``, whatever its type (text too)."""
        self._check_free(env_index)
        self._pending[env_index] = time.monotonic()
        self.workers[env_index].send_step(action)
        self._sent(env_index)

    @renamed(worker_id="env_index")
    def send_action(self, action: Any, env_index: int) -> None:
        """ml-starter's call: ``"reset"`` resets env ``env_index``, ``"close"`` closes it.

        Any other action is a step, as with :meth:`send_step`, which never
        reads the action (use it, and :meth:`send`, for envs whose actions are text).
        """
        if names_command(action, "close"):
            self._check_free(env_index)
            self.workers[env_index].cleanup()
        elif names_command(action, "reset"):
            self.send_reset(env_index)
        else:
            self.send_step(action, env_index)

    @renamed(worker_id="env_index")
    def send_reset(
        self, env_index: int, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> None:
        """Reset env ``env_index`` with ``seed``."""
        self._check_free(env_index)
        self._pending[env_index] = time.monotonic()
        self.workers[env_index].send_reset(seed, options)
        self._sent(env_index)

    def _sent(self, slot: int) -> None:  # noqa: B027 (an optional hook)
        """Note that ``slot`` has a command in flight (async pools watch its pipe)."""

    def reset(self, seeds: Sequence[int | None] | None = None) -> None:
        """Send a reset to every env (answers come back through get_state/recv)."""
        for slot in range(self.num_envs):
            self.send_reset(slot, None if seeds is None else seeds[slot])

    @renamed(env_ids="env_indices")
    def send(self, actions: Sequence[Any], env_indices: Sequence[int]) -> None:
        """Step env ``env_indices[i]`` with ``actions[i]`` (the batched interface, any actions)."""
        self._check_open()
        if len(actions) != len(env_indices):
            raise ValueError(f"{len(actions)} actions for {len(env_indices)} env indices")
        for action, slot in zip(actions, env_indices, strict=True):
            self.send_step(action, slot)

    def get_state(self, timeout: float | None = None) -> tuple[EnvState, int]:
        """Return the next answer and its slot, in completion order."""
        self._check_open()
        if not self._answered:
            self._answered.extend(self._wait(timeout, everything=False))
        return self._answered.popleft()

    def recv(
        self, batch_size: int | None = None, timeout: float | None = None
    ) -> tuple[list[EnvState], list[int]]:
        """Return answers of the first envs to finish, and their slots.

        ``batch_size=None``: wait for one, then take every answer ready now.
        An int: wait until that many are in (or as many as are in flight), or
        until ``timeout`` passes with at least one (TimeoutError with none).
        """
        self._check_open()
        in_flight = len(self._pending) + len(self._answered)
        if in_flight == 0:
            raise NothingPendingError("recv() with nothing in flight: send actions or resets first")
        want = 1 if batch_size is None else max(1, min(batch_size, in_flight))
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self._answered) < want:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                self._answered.extend(self._wait(left, everything=True))
            except TimeoutError:
                if self._answered:
                    break
                raise
        take = len(self._answered) if batch_size is None else min(want, len(self._answered))
        out = [self._answered.popleft() for _ in range(take)]
        return [state for state, _ in out], [slot for _, slot in out]

    def drain(self) -> None:
        """Wait for every command in flight and drop its answer: the pool is free again.

        A fault among them is handled as always (its env rebuilt).
        """
        while self._pending or self._answered:
            self.recv()
            self._answered.clear()

    @abc.abstractmethod
    def _wait(self, timeout: float | None, everything: bool) -> list[tuple[EnvState, int]]:
        """Wait for at least one answer (all ready ones if ``everything``)."""

    def _answered_by(self, slot: int) -> None:  # noqa: B027 (an optional hook)
        """Note that ``slot`` answered (or timed out)."""

    def _receive(self, slot: int, state: EnvState) -> tuple[EnvState, int]:
        del self._pending[slot]
        self._answered_by(slot)
        if state.fault:
            self._fault(slot, state)
        return state, slot

    def _fault(self, slot: int, state: EnvState) -> None:
        self.faults.append((slot, state.status, state.error or state.status))
        self._count_restart(slot, state)
        worker = self.workers[slot]
        worker.restart(hard=state.status == TIMEOUT or not worker.alive)

    def _count_restart(self, slot: int, state: EnvState) -> None:
        """Count one rebuild for ``state``'s fault; EnvPoolError when the budget is spent."""
        error = state.error or state.status
        self.restarts[slot] += 1
        total = sum(self.restarts)
        if self.max_restarts is not None and total > self.max_restarts:
            last = error.strip().splitlines()[-1] if error.strip() else state.status
            raise EnvPoolError(
                f"env {slot} failed ({state.status}: {last}) and the pool's restart budget is "
                f"spent ({self.max_restarts} rebuilds, max_restarts={self.max_restarts}); fix the "
                f"env or raise max_restarts. Full error:\n{error}"
            )

    def _clock(self, limit: float | None) -> tuple[list[int], float | None]:
        """Envs whose build or step time ran out, and ``limit`` cut to the next deadline."""
        return self.deadlines.clock(self._pending, self.workers, limit)

    def _timed_out(self, slot: int) -> EnvState:
        return self.deadlines.timed_out(slot, self.workers[slot])

    def cleanup(self) -> None:
        """Close every env and stop every thread and process.

        Envs in the middle of a command are killed (a step that hangs would
        never see the close); the others close their env, all at once.
        """
        for slot, worker in enumerate(self.workers):
            if isinstance(worker, AsyncEnvWorker):
                if slot in self._pending:
                    worker.kill()
                else:
                    worker.request_close()
        for worker in self.workers:
            worker.cleanup()
        for slot in list(self._pending):
            self._answered_by(slot)
        self._pending.clear()
        self._answered.clear()
        self.closed = True

    def close(self) -> None:
        """Close the pool (same as :meth:`cleanup`)."""
        self.cleanup()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    @classmethod
    def from_workers(cls, workers: Sequence[BaseEnvWorker], **kwargs: Any) -> WorkerPool:
        """Build a pool from ``workers`` (ml-starter's constructor)."""
        return cls(workers, **kwargs)


class SyncWorkerPool(WorkerPool):
    """Answers in the order commands were sent; async workers are awaited one by one.

    With :class:`SyncEnvWorker` a step runs inside ``send_action``, so a hung
    env blocks the caller: use :class:`AsyncWorkerPool` where hangs matter.

    Examples
    --------
    >>> import gymnasium as gym
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2))
    >>> pool.reset()
    >>> states, slots = pool.recv()
    >>> [str(s.status) for s in states], slots
    (['reset', 'reset'], [0, 1])
    >>> pool.cleanup()
    """

    workers: Sequence[BaseEnvWorker]

    def __new__(cls, workers: Sequence[BaseEnvWorker] = (), **kwargs: Any) -> SyncWorkerPool:  # noqa: D102
        # Envs stepped in this thread answer at once: a pool of those alone is an
        # _InlinePool, whose quick path costs less than a CartPole step.
        if cls is SyncWorkerPool and workers and all(type(w) is SyncEnvWorker for w in workers):
            cls = _InlinePool
        return super().__new__(cls)

    def __init__(self, workers: Sequence[BaseEnvWorker], **kwargs: Any) -> None:
        super().__init__(workers, **kwargs)

    def _wait(self, timeout: float | None, everything: bool) -> list[tuple[EnvState, int]]:
        if not self._pending:
            raise NothingPendingError("get_state() with nothing in flight: send an action first")
        deadline = None if timeout is None else time.monotonic() + timeout
        out = []
        for slot in list(self._pending):
            worker = self.workers[slot]
            state = None
            while state is None:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    if isinstance(worker, AsyncEnvWorker):
                        # None: the env said it is built, and its step clock starts now.
                        state = worker.next_message(
                            shorter(left, self.deadlines.left(worker, self._pending[slot]))
                        )
                    else:
                        state = worker.get_state(left)
                except TimeoutError:
                    if not self.deadlines.expired(worker, self._pending[slot]):
                        raise  # the caller's timeout, not the env's: it stays in flight
                    state = self._timed_out(slot)
            out.append(self._receive(slot, state))
            if not everything or not isinstance(worker, SyncEnvWorker):
                break
        return out


class _InlinePool(SyncWorkerPool):
    """A :class:`SyncWorkerPool` of :class:`SyncEnvWorker` only: each answer is made at send.

    A step runs in ``send``; its answer waits in ``_ready`` for ``recv``, in
    order. Faults are handled on receipt, as in every pool.
    """

    workers: Sequence[SyncEnvWorker]

    def __init__(self, workers: Sequence[BaseEnvWorker], **kwargs: Any) -> None:
        super().__init__(workers, **kwargs)
        self._ready: dict[int, EnvState] = {}

    def send_step(self, action: Any, env_index: int) -> None:
        self._check_free(env_index)
        self._pending[env_index] = 0.0
        self._ready[env_index] = self.workers[env_index].step_now(action)

    @renamed(worker_id="env_index")
    def send_reset(
        self, env_index: int, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> None:
        self._check_free(env_index)
        worker = self.workers[env_index]
        worker.send_reset(seed, options)
        self._pending[env_index] = 0.0
        self._ready[env_index] = worker.get_state()

    @renamed(env_ids="env_indices")
    def send(self, actions: Sequence[Any], env_indices: Sequence[int]) -> None:
        self._check_open()
        if len(actions) != len(env_indices):
            raise ValueError(f"{len(actions)} actions for {len(env_indices)} env indices")
        workers, pending, ready, n = self.workers, self._pending, self._ready, len(self.workers)
        for action, slot in zip(actions, env_indices, strict=True):
            if not 0 <= slot < n or slot in pending:
                self._check_free(slot)
            pending[slot] = 0.0
            ready[slot] = workers[slot].step_now(action)

    def cleanup(self) -> None:
        super().cleanup()
        self._ready.clear()

    def _wait(self, timeout: float | None, everything: bool) -> list[tuple[EnvState, int]]:
        if not self._pending:
            raise NothingPendingError("get_state() with nothing in flight: send an action first")
        ready, self._ready = self._ready, {}
        if not everything:  # one answer; the others stay ready, in order
            first = next(iter(ready))
            self._ready = {k: v for k, v in ready.items() if k != first}
            ready = {first: ready[first]}
        pending, answers = self._pending, []
        for slot, answer in ready.items():
            del pending[slot]
            if answer.status in FAULTS:
                self._fault(slot, answer)
            answers.append((answer, slot))
        return answers


class AsyncWorkerPool(WorkerPool):
    """Every env runs at once in its thread or process; answers come in completion order.

    Examples
    --------
    >>> import gymnasium as gym
    >>> workers = AsyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2, mode="thread")
    >>> with AsyncWorkerPool(workers, step_timeout=30) as pool:
    ...     pool.reset()
    ...     states, slots = pool.recv(batch_size=2)
    ...     sorted(slots)
    [0, 1]
    """

    workers: Sequence[AsyncEnvWorker]

    def __init__(self, workers: Sequence[BaseEnvWorker], **kwargs: Any) -> None:
        bad = [i for i, w in enumerate(workers) if not isinstance(w, AsyncEnvWorker)]
        if bad:
            raise TypeError(
                f"AsyncWorkerPool needs AsyncEnvWorker workers; slots {bad} are not "
                "(use SyncWorkerPool, or get_worker_pool(workers) to choose)"
            )
        super().__init__(workers, **kwargs)
        # One poll object for the pipes with a command in flight: registering is a dict
        # update, and waiting costs one system call (connection.wait builds a selector
        # every time).
        self._poller = select.poll()
        self._slot_of: dict[int, int] = {}  # fd -> slot, for slots in flight
        self._fd_of: dict[int, int] = {}  # slot -> fd

    def _sent(self, slot: int) -> None:
        fd = self.workers[slot].connection.fileno()
        self._slot_of[fd], self._fd_of[slot] = slot, fd
        self._poller.register(fd, select.POLLIN)

    def _answered_by(self, slot: int) -> None:
        fd = self._fd_of.pop(slot, None)
        if fd is not None:
            del self._slot_of[fd]
            self._poller.unregister(fd)

    def _wait(self, timeout: float | None, everything: bool) -> list[tuple[EnvState, int]]:
        if not self._pending:
            raise NothingPendingError("get_state() with nothing in flight: send an action first")
        deadline = None if timeout is None else time.monotonic() + timeout
        workers = self.workers
        while True:
            limit = None if deadline is None else max(0.0, deadline - time.monotonic())
            expired, limit = self._clock(limit)
            if expired:
                return [self._receive(slot, self._timed_out(slot)) for slot in expired]
            events = self._poller.poll(None if limit is None else limit * 1000)
            if events:
                # Oldest command first among those ready: fair to slow envs.
                slots = sorted(
                    {self._slot_of[fd] for fd, _ in events}, key=self._pending.__getitem__
                )
                out: list[tuple[EnvState, int]] = []
                for slot in slots:
                    if out and not everything:
                        break
                    state = workers[slot].receive()
                    if state is not None:  # None: the env is built; its step clock starts
                        out.append(self._receive(slot, state))
                if out:
                    return out
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"no env answered within {timeout:g} s")
