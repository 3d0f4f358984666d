"""Environment workers: one env each, run in this thread, another thread or another process.

A worker is built from an env *factory* (a zero-argument callable returning a
gymnasium-style env), never from a shared env instance, so it can rebuild its
env after a fault. The interface is ml-starter's: :meth:`send_action` with an
action, ``"reset"`` or ``"close"``, then :meth:`get_state`. Answers are
:class:`~kit.rl.pool.EnvState` objects; an exception inside the env comes back as
a state with status ``"env_error"`` and the traceback, never as a hang.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import multiprocessing
import signal
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import numpy as np

from kit._base.errors import ClosedPoolError, NothingPendingError
from kit.rl import _protocol as protocol
from kit.rl._names import renamed
from kit.rl._types import ENV_ERROR, RESET, STEPPED, EnvState

__all__ = ["AsyncEnvWorker", "BaseEnvWorker", "EnvSlot", "SyncEnvWorker", "make_workers"]

EnvFn = Callable[[], Any]
MODES = ("thread", "process")
#: How env processes start: from a clean fork server where there is one (safe
#: beside threads, like spawn, and each env step costs about half what it costs
#: in a spawned process here), else spawned.
DEFAULT_CONTEXT = (
    "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
)


def names_command(action: Any, word: str) -> bool:
    """Whether ml-starter's ``send_action`` reads ``action`` as the command ``word``."""
    return isinstance(action, str) and action == word


def _seeds(seed: int | None, n: int) -> list[int | None]:
    if seed is None:
        return [None] * n
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n)]


def run_command(env: Any, command: tuple[Any, ...]) -> EnvState:
    """Apply a ``STEP`` or ``RESET`` message (:mod:`kit.rl._protocol`) to ``env``; never raise."""
    try:
        if command[0] == protocol.RESET:
            obs, info = env.reset(seed=command[1], options=command[2])
            return EnvState(obs, 0.0, False, False, info, RESET)
        return stepped(env.step(command[1]))
    except Exception:
        return EnvState(None, status=ENV_ERROR, error=traceback.format_exc())


def stepped(answer: Any) -> EnvState:
    """Return the state of what ``env.step`` returned; raise when it is not one.

    Examples
    --------
    >>> stepped((0, 1, False, False, {})).reward
    1.0
    >>> stepped((0, "one", False, False, {}))
    Traceback (most recent call last):
    ...
    TypeError: env.step returned the reward 'one' (str); a reward must be a number
    """
    obs, reward, terminated, truncated, info = answer
    try:
        value = float(reward)
    except (TypeError, ValueError):
        raise TypeError(
            f"env.step returned the reward {reward!r} ({type(reward).__name__}); "
            "a reward must be a number"
        ) from None
    return EnvState(obs, value, bool(terminated), bool(truncated), info, STEPPED)


def build_env(factory: EnvFn) -> tuple[Any, str | None]:
    """Build an env: ``(env, None)``, or ``(None, traceback)`` when the factory raised."""
    try:
        return factory(), None
    except Exception:
        return None, traceback.format_exc()


def _close_quietly(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


class EnvSlot(abc.ABC):
    """One env of a pool, as its slot: it takes commands, is rebuilt, is closed.

    Where its answers come from is not its part: a :class:`BaseEnvWorker`
    answers through its own ``get_state``, an env of a
    :class:`~kit.rl.shared.SharedMemoryPool` through the pool's ``recv``. ``seed``
    seeds the first ``"reset"`` sent without an explicit seed (later ones
    continue the env's own generator, as gymnasium does).

    Examples
    --------
    >>> issubclass(SyncEnvWorker, EnvSlot), hasattr(EnvSlot, "get_state")
    (True, False)
    """

    def __init__(self, env_fn: EnvFn, seed: int | None = None) -> None:
        if not callable(env_fn):
            raise TypeError(
                f"env_fn must be a zero-argument callable that builds an env, got "
                f"{type(env_fn).__name__} (pass the factory, e.g. "
                "functools.partial(gymnasium.make, 'CartPole-v1'), not an env instance)"
            )
        self.env_fn = env_fn
        self.seed = seed
        self._seeded = False

    def _reset_seed(self, seed: int | None) -> int | None:
        if seed is None and not self._seeded:
            seed = self.seed
        self._seeded = True
        return seed

    def send_step(self, action: Any) -> None:
        """Step the env with ``action``, whatever its type (text ``"reset"`` too)."""
        self._send(protocol.step(action))

    def send_action(self, action: Any) -> None:
        """ml-starter's call: ``"reset"`` resets, ``"close"`` shuts down, else a step.

        For envs whose actions are text, use :meth:`send_step`,
        :meth:`send_reset` and :meth:`close`, which never read the action.
        """
        if names_command(action, "reset"):
            self.send_reset()
        elif names_command(action, "close"):
            self.cleanup()
        else:
            self.send_step(action)

    def send_reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Reset the env with ``seed`` (the worker's own seed first, if None)."""
        self._send(protocol.reset(self._reset_seed(seed), options))

    @abc.abstractmethod
    def _send(self, command: tuple[Any, ...]) -> None: ...

    @abc.abstractmethod
    def restart(self, hard: bool = False) -> None:
        """Rebuild the env from its factory (``hard``: also a new thread or process)."""

    @property
    def alive(self) -> bool:
        """False when the worker's thread or process has died."""
        return True

    #: Whether the env is built (a sync worker builds it before anything is sent).
    ready: bool = True
    #: ``time.monotonic()`` when the worker last started building its env, and when
    #: it was seen built: a pool's step clock starts at the later of that and a send.
    started_at: float = 0.0
    ready_at: float = 0.0

    @abc.abstractmethod
    def cleanup(self) -> None:
        """Close the env and stop the thread or process; safe to call twice."""

    def close(self) -> None:
        """Close the worker (same as :meth:`cleanup`)."""
        self.cleanup()


class BaseEnvWorker(EnvSlot):
    """One env behind ``send_action`` / ``get_state``.

    Examples
    --------
    >>> import gymnasium as gym
    >>> workers = SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2, seed=0)
    >>> isinstance(workers[0], BaseEnvWorker), workers[0].seed != workers[1].seed
    (True, True)
    """

    @abc.abstractmethod
    def get_state(self, timeout: float | None = None) -> EnvState:
        """Return the answer to the oldest command sent (TimeoutError after ``timeout`` s)."""

    @classmethod
    @renamed(num_workers="num_envs")
    def from_env_fn(
        cls, env_fn: EnvFn, num_envs: int, seed: int | None = 0, **kwargs: Any
    ) -> list[Any]:
        """Build ``num_envs`` workers, each with its own env from ``env_fn``.

        Their seeds are spawned from ``seed`` (distinct, reproducible).
        ml-starter's ``num_workers`` keyword is an alias of ``num_envs``.
        """
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        return [cls(env_fn, s, **kwargs) for s in _seeds(seed, num_envs)]


class SyncEnvWorker(BaseEnvWorker):
    """A worker that runs its env in the calling thread (a step runs in ``send_action``).

    Examples
    --------
    >>> import gymnasium as gym
    >>> worker = SyncEnvWorker(lambda: gym.make("CartPole-v1"), seed=0)
    >>> worker.send_action("reset"); str(worker.get_state().status)
    'reset'
    >>> worker.send_action(1); state = worker.get_state()
    >>> state.status, state.reward, state.terminated
    (<EnvStatus.STEPPED: 'ok'>, 1.0, False)
    >>> worker.cleanup()
    """

    def __init__(self, env_fn: EnvFn, seed: int | None = None) -> None:
        super().__init__(env_fn, seed)
        self._answers: deque[EnvState] = deque()
        self._build_error: str | None = None
        self._env: Any = self._build()

    def _build(self) -> Any:
        try:
            self._build_error = None
            return self.env_fn()
        except Exception:
            self._build_error = traceback.format_exc()
            return None

    def _send(self, command: tuple[Any, ...]) -> None:
        if self._env is None:
            error = f"building the env failed:\n{self._build_error}"
            self._answers.append(EnvState(None, status=ENV_ERROR, error=error))
        else:
            self._answers.append(run_command(self._env, command))

    def step_now(self, action: Any) -> EnvState:
        """Step the env with ``action`` and return the answer (what a sync pool calls)."""
        env = self._env
        if env is None:
            return EnvState(
                None, status=ENV_ERROR, error=f"building the env failed:\n{self._build_error}"
            )
        try:
            return stepped(env.step(action))
        except Exception:
            return EnvState(None, status=ENV_ERROR, error=traceback.format_exc())

    def get_state(self, timeout: float | None = None) -> EnvState:  # noqa: D102
        if not self._answers:
            raise NothingPendingError("get_state() with nothing sent: call send_action() first")
        return self._answers.popleft()

    def restart(self, hard: bool = False) -> None:  # noqa: D102
        _close_quietly(self._env)
        self._answers.clear()
        self._env = self._build()

    def cleanup(self) -> None:  # noqa: D102
        env, self._env = self._env, None
        _close_quietly(env)
        self._build_error = "the worker was closed"


def _serve(conn: Connection, env_fn: EnvFn | bytes, in_process: bool) -> None:
    """Run an async worker's thread or process: build the env, answer commands."""
    if in_process:
        # Ctrl-C belongs to the parent, which cleans up; a child killed by it would
        # leave its slot broken and print a traceback into the notebook.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    factory: EnvFn = cloudpickle.loads(env_fn) if isinstance(env_fn, bytes) else env_fn
    build = functools.partial(build_env, factory)
    env, build_error = build()
    try:
        if not _tell_ready(conn):
            return
        while True:
            try:
                command = conn.recv()
            except (EOFError, OSError):
                return
            if command[0] == protocol.CLOSE:
                return
            if command[0] == protocol.REBUILD:
                _close_quietly(env)
                env, build_error = build()
                if not _tell_ready(conn):
                    return
                continue
            if env is None:
                state = EnvState(
                    None, status=ENV_ERROR, error=f"building the env failed:\n{build_error}"
                )
            else:
                state = run_command(env, command)
            try:
                conn.send(protocol.answer(state))
            except (BrokenPipeError, OSError):
                return  # the parent gave up on this worker
            except Exception:  # the observation or info cannot be pickled
                state = EnvState(None, status=ENV_ERROR, error=traceback.format_exc())
                conn.send(protocol.answer(state))
    finally:
        _close_quietly(env)
        conn.close()


def _tell_ready(conn: Connection) -> bool:
    try:
        conn.send(protocol.ready())
    except (BrokenPipeError, OSError):
        return False  # the parent gave up on this worker
    return True


def start_process(
    context: str,
    target: Callable[..., None],
    args: tuple[Any, ...],
    daemon: bool,
    parent: Connection,
    child: Connection,
) -> Any:
    """Start ``target(*args)`` in a process whose end of the pipe is ``child``."""
    ctx: Any = multiprocessing.get_context(context)
    process = ctx.Process(target=target, args=args, daemon=daemon)
    try:
        process.start()
    except AssertionError as exc:  # "daemonic processes are not allowed to have children"
        parent.close()
        child.close()
        raise RuntimeError(
            f"cannot start an env process here ({exc}): this is a daemonic process, "
            "e.g. a Dask worker; use mode='thread' or 'sync', or set the Dask "
            "config distributed.worker.daemon: false"
        ) from None
    child.close()
    return process


def _kill(process: Any) -> None:
    if process is not None and process.is_alive():
        process.kill()
        process.join(5)


class AsyncEnvWorker(BaseEnvWorker):
    """A worker whose env runs in its own thread (``mode="thread"``) or process.

    Commands go through a pipe; :meth:`get_state` waits for the answer.
    Processes are started with ``context`` (by default ``"forkserver"``,
    ``"spawn"`` where there is none: both are safe in notebooks and threaded
    programs; the factory is sent with cloudpickle, so one defined in a
    notebook works). A process that dies (killed,
    segfault, ``os._exit``) answers with status ``"env_error"`` and its exit
    code. A thread cannot be killed: a hung thread is abandoned on restart.

    Examples
    --------
    >>> import gymnasium as gym
    >>> worker = AsyncEnvWorker(lambda: gym.make("CartPole-v1"), seed=0, mode="thread")
    >>> worker.send_action("reset"); str(worker.get_state(timeout=10).status)
    'reset'
    >>> worker.cleanup()
    """

    def __init__(
        self,
        env_fn: EnvFn,
        seed: int | None = None,
        *,
        mode: str = "process",
        context: str | None = None,
        cleanup_time: float = 5.0,
        daemon: bool = True,
    ) -> None:
        super().__init__(env_fn, seed)
        if mode not in MODES:
            raise ValueError(f"mode must be 'thread' or 'process', got {mode!r}")
        self.mode = mode
        self.context = context or DEFAULT_CONTEXT
        self.cleanup_time = cleanup_time
        self.daemon = daemon
        self._payload = cloudpickle.dumps(env_fn) if mode == "process" else None
        self._process: Any = None
        self._thread: threading.Thread | None = None
        self._conn: Connection | None = None
        self._start()

    def _start(self) -> None:
        self._building()
        parent, child = multiprocessing.Pipe()
        if self.mode == "process":
            process = start_process(
                self.context, _serve, (child, self._payload, True), self.daemon, parent, child
            )
            self._process = process
            self._finalizer = weakref.finalize(self, _kill, process)
        else:
            self._thread = threading.Thread(
                target=_serve, args=(child, self.env_fn, False), daemon=True, name="kit-env"
            )
            self._thread.start()
        self._conn = parent

    @property
    def connection(self) -> Connection:
        """The pipe end to wait on (see :func:`multiprocessing.connection.wait`)."""
        if self._conn is None:
            raise ClosedPoolError("the worker was cleaned up: make a new one")
        return self._conn

    @property
    def alive(self) -> bool:  # noqa: D102
        if self._process is not None:
            return bool(self._process.is_alive())
        return self._thread is not None and self._thread.is_alive()

    def _send(self, command: tuple[Any, ...]) -> None:
        # A dead worker cannot take the command: get_state reports its death.
        with contextlib.suppress(BrokenPipeError, OSError):
            self.connection.send(command)

    def _building(self) -> None:
        self.ready = False
        self.started_at = time.monotonic()

    def get_state(self, timeout: float | None = None) -> EnvState:  # noqa: D102
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                state = self.next_message(left)
            except TimeoutError:
                raise TimeoutError(f"the env gave no answer within {timeout:g} s") from None
            if state is not None:
                return state

    def next_message(self, timeout: float | None = None) -> EnvState | None:
        """Wait for the next message: an answer, or None when it said its env is built.

        Raises TimeoutError when nothing came within ``timeout`` seconds.
        """
        conn = self.connection
        try:
            arrived = conn.poll(timeout)
        except (EOFError, OSError):
            return EnvState(None, status=ENV_ERROR, error=self._death())
        if not arrived:  # raised out here: TimeoutError is an OSError
            raise TimeoutError(f"the env gave no answer within {timeout:g} s")
        return self.receive()

    def receive(self) -> EnvState | None:
        """Read a message known to be there: an answer, or None for "env built"."""
        try:
            message = self.connection.recv()
        except (EOFError, OSError):
            return EnvState(None, status=ENV_ERROR, error=self._death())
        if message[0] == protocol.READY:
            self.ready, self.ready_at = True, time.monotonic()
            return None
        return protocol.read_answer(message)

    def _death(self) -> str:
        if self._process is not None:
            self._process.join(1)
            code = self._process.exitcode
            if code is not None and code < 0:
                try:
                    return f"the env process died by signal {signal.Signals(-code).name}"
                except ValueError:
                    pass
            return f"the env process exited (exit code {code})"
        return "the env thread ended"

    def restart(self, hard: bool = False) -> None:  # noqa: D102
        if not hard and self.alive:
            self._building()
            self._send(protocol.rebuild())
            return
        self._stop(kill=True)
        self._start()

    def _stop(self, kill: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            if not kill:
                with contextlib.suppress(BrokenPipeError, OSError):
                    conn.send(protocol.close())
            conn.close()  # a hung thread's next send fails and it ends
        if self._process is not None:
            if not kill:
                self._process.join(self.cleanup_time)
            _kill(self._process)
            self._process = None
        elif self._thread is not None and not kill:
            self._thread.join(self.cleanup_time)
        self._thread = None

    def kill(self) -> None:
        """Stop at once: kill the process (a thread is abandoned), skipping ``env.close()``."""
        self._stop(kill=True)

    def request_close(self) -> None:
        """Ask the env to close without waiting (then :meth:`cleanup` waits for it)."""
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(protocol.close())

    def cleanup(self) -> None:  # noqa: D102
        self._stop(kill=False)


def make_workers(
    env_fn: EnvFn, num_envs: int, *, mode: str = "sync", seed: int | None = 0, **kwargs: Any
) -> Sequence[BaseEnvWorker]:
    """Build ``num_envs`` workers in ``mode`` ``"sync"``, ``"thread"`` or ``"process"``.

    Examples
    --------
    >>> import gymnasium as gym
    >>> workers = make_workers(lambda: gym.make("CartPole-v1"), 3, mode="thread")
    >>> [type(w).__name__ for w in workers]
    ['AsyncEnvWorker', 'AsyncEnvWorker', 'AsyncEnvWorker']
    >>> for w in workers: w.cleanup()
    """
    if mode == "sync":
        return SyncEnvWorker.from_env_fn(env_fn, num_envs, seed)
    if mode not in MODES:
        raise ValueError(f"mode must be 'sync', 'thread' or 'process', got {mode!r}")
    return AsyncEnvWorker.from_env_fn(env_fn, num_envs, seed, mode=mode, **kwargs)
