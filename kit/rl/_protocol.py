"""The messages on the pipes between a pool and its env threads or processes, declared once.

Every message is a tuple whose first element is an :class:`Op` code; the
functions below build each kind, and both ends read them by that code. Two
pipes use them:

- a pool's worker (one env, :mod:`kit.rl.workers`): the parent sends
  ``STEP``, ``RESET``, ``REBUILD`` or ``CLOSE``; the worker says ``READY``
  once its env is built (or failed to build), then one ``ANSWER`` a command;
- a :class:`~kit.rl.shared.SharedMemoryPool` process (many envs,
  :mod:`kit.rl.shared`): the parent sends ``RUN`` batches of
  :data:`GroupCommand` and ``CLOSE``; the process says ``READY`` with its
  shared block's layout, ``REBUILT`` per env rebuilt, and ``ANSWERS``.

Codes travel as plain ints: an enum member pickles by name, which costs more
than a CartPole step (about 6 µs a message against 1 µs for a tuple of ints).

Examples
--------
>>> message = step(1)
>>> message[0] == Op.STEP, type(message[0]) is int
(True, True)
>>> read_answer(answer(EnvState("obs", 1.0, False, False, {}, EnvStatus.STEPPED))).reward
1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any

import numpy as np

from kit.rl._types import EnvState, EnvStatus


class Op(IntEnum):
    """What a message is: the first element of every tuple on an env pipe."""

    #: Parent to worker: ``(STEP, action)``. In a ``RUN`` batch: step with ``arg``.
    STEP = 1
    #: Parent to worker: ``(RESET, seed, options)``. In a ``RUN`` batch: ``arg`` is
    #: ``(seed, options)``.
    RESET = 2
    #: Parent to worker: ``(REBUILD,)``, build the env anew. In a ``RUN`` batch: that env's.
    REBUILD = 3
    #: Parent to worker or process: ``(CLOSE,)``, close the envs and end.
    CLOSE = 4
    #: Worker to parent: ``(READY,)``, the env is built (or failed to be); the step clock
    #: starts. Process to parent: ``(READY, layout)``, its shared block's layout.
    READY = 5
    #: Worker to parent: ``(ANSWER, obs, reward, terminated, truncated, info, status, error)``.
    ANSWER = 6
    #: Parent to process: ``(RUN, [GroupCommand, ...])``, the commands of several envs at once.
    RUN = 7
    #: In a ``RUN`` batch: step with the action the parent wrote into the shared block.
    STEP_SHARED = 8
    #: Process to parent: ``(REBUILT,)``, one env was rebuilt.
    REBUILT = 9
    #: Process to parent: ``(ANSWERS, [GroupAnswer, ...])``.
    ANSWERS = 10


#: One env's command in a ``RUN`` batch: ``(env, op, arg)``, the env's place in the process.
GroupCommand = tuple[int, int, Any]
#: One env's answer in an ``ANSWERS`` message: ``(env, status, obs_shared, obs, info, error)``;
#: ``obs_shared`` says the observation is in the shared block, with reward and the flags.
GroupAnswer = tuple[int, str, bool, Any, "dict[str, Any] | None", "str | None"]

#: The codes as plain ints, for the loops that build and read messages: finding an
#: enum member (``Op.STEP``, ``.value``) costs several times the comparison itself.
STEP, RESET, REBUILD, CLOSE, READY, ANSWER, RUN, STEP_SHARED, REBUILT, ANSWERS = (
    op.value for op in Op
)
#: An env's :class:`~kit.rl.pool.EnvStatus` as it travels, its plain value (pickling an
#: enum member costs 4 us, several times a CartPole step), and the member each reads as.
SENT: dict[EnvStatus, str] = {status: status.value for status in EnvStatus}
READ: dict[str, EnvStatus] = {status.value: status for status in EnvStatus}
#: The values a process sends in a ``GroupAnswer``.
SENT_RESET, SENT_STEPPED, SENT_ENV_ERROR = (
    EnvStatus.RESET.value,
    EnvStatus.STEPPED.value,
    EnvStatus.ENV_ERROR.value,
)
#: Marks an observation sent as its raw bytes (see :func:`answer`).
_ARRAY = "kit-ndarray"


def step(action: Any) -> tuple[Any, ...]:
    """``(STEP, action)``."""
    return (STEP, action)


def reset(seed: int | None, options: dict[str, Any] | None) -> tuple[Any, ...]:
    """``(RESET, seed, options)``."""
    return (RESET, seed, options)


def rebuild() -> tuple[Any, ...]:
    """``(REBUILD,)``."""
    return (REBUILD,)


def close() -> tuple[Any, ...]:
    """``(CLOSE,)``."""
    return (CLOSE,)


def ready(layout: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """``(READY,)`` from a worker, ``(READY, layout)`` from a shared-memory process."""
    return (READY,) if layout is None else (READY, layout)


def run(commands: Sequence[GroupCommand]) -> tuple[Any, ...]:
    """``(RUN, commands)``."""
    return (RUN, list(commands))


def rebuilt() -> tuple[Any, ...]:
    """``(REBUILT,)``."""
    return (REBUILT,)


def answers(given: Sequence[GroupAnswer]) -> tuple[Any, ...]:
    """``(ANSWERS, given)``."""
    return (ANSWERS, list(given))


def answer(state: EnvState) -> tuple[Any, ...]:
    """``(ANSWER, *state)``, cheap to pickle: a numpy observation goes as raw bytes.

    Pickling a numpy array costs more than a CartPole step; its bytes, dtype
    and shape cost little (gymnasium's AsyncVectorEnv uses shared memory to
    the same end).
    """
    obs, reward, terminated, truncated, info, status, error = state
    if type(obs) is np.ndarray and obs.dtype.hasobject is False:
        obs = (_ARRAY, obs.tobytes(), obs.dtype.str, obs.shape)
    return (ANSWER, obs, reward, terminated, truncated, info, SENT[status], error)


def read_answer(message: tuple[Any, ...]) -> EnvState:
    """Return the :class:`~kit.rl.pool.EnvState` an ``ANSWER`` message carries."""
    obs = message[1]
    if type(obs) is tuple and len(obs) == 4 and obs[0] == _ARRAY:
        obs = np.frombuffer(obs[1], dtype=obs[2]).reshape(obs[3]).copy()
    _, _, reward, terminated, truncated, info, status, error = message
    return EnvState(obs, reward, terminated, truncated, info, READ[status], error)
