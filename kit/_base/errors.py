"""Every error and warning class Kit raises on purpose, defined on the ground floor.

This module imports nothing of Kit (and nothing outside the standard
library), so any wing can raise these without importing another wing, and
``kit.errors`` re-exports them without loading the rest of Kit. Users
import them from :mod:`kit.errors` (three from ``kit`` too).
"""

from __future__ import annotations

from typing import Any


class KitError(Exception):
    """Base of Kit's own errors; each also subclasses the matching builtin.

    ``ConfigError`` is a ``ValueError``, ``StoreError``, ``RunError`` and
    ``ProviderSetupError`` are ``RuntimeError`` s, so code that catches the
    builtin keeps working, and a tool (the CLI, a notebook panel) catches
    ``KitError`` to tell Kit's explained failures from bugs.

    Examples
    --------
    >>> from kit import ConfigError, KitError, RunError
    >>> from kit.errors import StoreError
    >>> issubclass(ConfigError, KitError) and issubclass(ConfigError, ValueError)
    True
    >>> all(issubclass(e, KitError) for e in (RunError, StoreError))
    True
    """


class StoreError(KitError, RuntimeError):
    """An output directory cannot be used for this run; the message says why and what to do.

    Examples
    --------
    >>> issubclass(StoreError, RuntimeError)
    True
    """

    #: Of the chunks a failed commit held, how many were stored before it failed.
    committed: int = 0


class ClusterError(KitError, RuntimeError):
    """The cluster a run needs cannot be had: the job queue refused its job, say.

    Examples
    --------
    >>> from kit.errors import ClusterError
    >>> from kit import KitError
    >>> issubclass(ClusterError, KitError) and issubclass(ClusterError, RuntimeError)
    True
    """


class NoWorkersError(ClusterError, TimeoutError):
    """No worker joined the cluster, or all left, within ``parallel.startup_timeout``.

    Examples
    --------
    >>> from kit.errors import NoWorkersError
    >>> issubclass(NoWorkersError, TimeoutError)
    True
    """


class SchedulerUnreachableError(ClusterError, ConnectionError):
    """Kit cannot connect to the scheduler at ``parallel.address``.

    Examples
    --------
    >>> from kit.errors import SchedulerUnreachableError
    >>> issubclass(SchedulerUnreachableError, ConnectionError)
    True
    """


class SchedulerLostError(ClusterError, ConnectionError):
    """The Dask scheduler a run used went away and did not come back in time.

    The chunks completed before are stored (with an ``output_dir``): run
    again to resume.

    Examples
    --------
    >>> issubclass(SchedulerLostError, ConnectionError)
    True
    """


class DriverLostError(KitError, RuntimeError):
    """A detached run's driver ended without finishing it; running again resumes it.

    Examples
    --------
    >>> from kit.errors import DriverLostError
    >>> issubclass(DriverLostError, RuntimeError)
    True
    """


class ConfigError(KitError, ValueError):
    """A configuration value, file or override is wrong.

    The message says what is wrong, where (full key, file or override) and how
    to fix it. The same facts are kept as attributes so that tools (the CLI,
    the notebook editor) can point at the offending field.

    Parameters
    ----------
    message
        The complete, human-readable message.
    full_key
        Dotted path of the offending key (``"parallel.env"``), or None when
        the problem is not about one key (a YAML syntax error, say).
    source
        Path of the file the offending value came from, or None when it came
        from Python or an override.

    Examples
    --------
    >>> err = ConfigError("parallel.env: bad", full_key="parallel.env")
    >>> isinstance(err, ValueError), err.full_key, err.source
    (True, 'parallel.env', None)
    """

    def __init__(
        self, message: str, *, full_key: str | None = None, source: str | None = None
    ) -> None:
        super().__init__(message)
        self.full_key = full_key
        self.source = source


class ProviderSetupError(KitError, RuntimeError):
    """Building a provider's env on a worker failed (the message has the worker's traceback).

    Examples
    --------
    >>> issubclass(ProviderSetupError, RuntimeError)
    True
    """


class EnvMissing(ProviderSetupError):
    """A chunk's worker has not the run's env (its build failed there even when tried again).

    Not the items' fault: the engine sends the chunk to another worker and
    no longer to this one; raised to the caller only when no worker has it.

    Examples
    --------
    >>> import pickle
    >>> error = pickle.loads(pickle.dumps(EnvMissing("no env", worker="tcp://w:1")))
    >>> error.worker, str(error)
    ('tcp://w:1', 'no env')
    """

    def __init__(self, message: str, worker: str = "") -> None:
        super().__init__(message)
        self.worker = worker

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (str(self), self.worker)


class RunError(KitError, RuntimeError):
    """A run stopped early: an item failed with ``on_error="raise"``, or too many failed.

    The completed part is kept: ``.result`` holds it (and ``output_dir``
    has it, so the next run resumes); ``.error`` is the item error that
    stopped the run.

    Examples
    --------
    >>> from kit.examples.toy import Env, Half
    >>> try:
    ...     Half(Env({}), on_error="raise").run([1, 0, 5])
    ... except RunError as err:
    ...     print(err.error.index, err.result.status)
    0 stopped
    """

    # The result (a kit.result.RunResult) and the item's error (an ItemError) are typed Any:
    # they stand a floor above, and this module imports nothing of Kit, not even for typing.
    def __init__(self, message: str, result: Any, error: Any) -> None:
        super().__init__(message)
        self.result = result
        self.error = error


class TrialPruned(KitError):
    """What a search's pruned trial ended with: when, and its running metric then.

    ``on_trial`` callbacks get it as the error of a trial the pruner stopped;
    the trial's completed items are its result, and its status is ``pruned``.

    Examples
    --------
    >>> error = TrialPruned("trial-002 pruned after 6 of 60 items: loss 0.42 there")
    >>> isinstance(error, KitError), str(error).split(":")[0]
    (True, 'trial-002 pruned after 6 of 60 items')
    """


class StoreWarning(UserWarning):
    """Something in an output directory was skipped; the message names it.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", StoreWarning)  # make a damaged directory fatal
    ...     issubclass(StoreWarning, UserWarning)
    True
    """


class TrackingWarning(RuntimeWarning):
    """A tracker could not be written to; the run went on and its output directory is whole.

    Examples
    --------
    >>> issubclass(TrackingWarning, RuntimeWarning)
    True
    """


class SetupCancelled(KitError):
    """The run was cancelled while its session was waiting for workers or an env.

    Examples
    --------
    >>> from kit import KitError
    >>> issubclass(SetupCancelled, KitError)
    True
    """


class FolderBusyError(StoreError):
    """Another process holds the lock of the folder a run or sweep would write.

    A :class:`kit.errors.StoreError`: what a second driver meets while the
    first writes there (a detached driver waits a moment for a submit's).

    Examples
    --------
    >>> issubclass(FolderBusyError, StoreError)
    True
    """


class UnsafeFileError(StoreError):
    """A file in a run directory is a link, not a regular file, or not trusted enough to read.

    A :class:`kit.errors.StoreError`, so code that handles those handles it.

    Examples
    --------
    >>> issubclass(UnsafeFileError, StoreError)
    True
    """


class ReuseMismatchError(KitError, RuntimeError):
    """A reused forward output differs from the one ``forward`` makes now (an item's error).

    ``forward`` reads something its runner's ``forward_keys`` and the
    fingerprints do not cover: the item fails, named, instead of a stale
    output passing as this run's.

    Examples
    --------
    >>> issubclass(ReuseMismatchError, RuntimeError)
    True
    """


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


def speak_as(module: str, namespace: dict[str, object], names: list[str]) -> None:
    """Have the error classes among ``names`` report ``module``, where users import them.

    A traceback then reads ``kit.ConfigError: ...``, not the private module
    the class is written in (httpx does the same). Only exceptions: other
    classes keep theirs, as their annotations are read in its namespace.

    Examples
    --------
    >>> import kit
    >>> kit.ConfigError.__module__, kit.errors.EnvPoolError.__module__
    ('kit', 'kit.errors')
    """
    for name in names:
        value = namespace[name]
        if isinstance(value, type) and issubclass(value, BaseException):
            value.__module__ = module
