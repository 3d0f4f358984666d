"""The errors of kit.rl's pools and workers: a spent restart budget, and misuse, typed.

As gymnasium's vector envs say ``ClosedEnvironmentError``,
``AlreadyPendingCallError`` and ``NoAsyncCallError``: code can catch the
misuse it expects, and each is a ``RuntimeError`` as before, and a
:class:`kit.KitError`.
"""

from __future__ import annotations

from kit._errors import KitError


class EnvPoolError(KitError, RuntimeError):
    """The pool cannot go on: its restart budget is spent.

    Examples
    --------
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> def broken():
    ...     raise OSError("no licence")
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(broken, 1), max_restarts=0)
    >>> pool.send_reset(0)
    >>> pool.get_state()
    Traceback (most recent call last):
    ...
    kit.errors.EnvPoolError: env 0 failed (env_error: OSError: no licence) and the pool's ...
    """


class ClosedPoolError(KitError, RuntimeError):
    """A command to a pool (or worker) that ``cleanup()`` or ``close()`` ended.

    Examples
    --------
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(dict, 1))
    >>> pool.close()
    >>> pool.send_reset(0)
    Traceback (most recent call last):
    ...
    kit.errors.ClosedPoolError: this pool is closed (cleanup() or close() ended its envs): ...
    """


class AlreadyPendingError(KitError, RuntimeError):
    """A command to an env whose previous command's answer was not received yet.

    Examples
    --------
    >>> issubclass(AlreadyPendingError, RuntimeError)
    True
    """


class NothingPendingError(KitError, RuntimeError):
    """``recv()`` or ``get_state()`` with no command in flight: it would wait for ever.

    Examples
    --------
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> SyncWorkerPool(SyncEnvWorker.from_env_fn(dict, 1)).recv()
    Traceback (most recent call last):
    ...
    kit.errors.NothingPendingError: recv() with nothing in flight: send actions or resets first
    """
