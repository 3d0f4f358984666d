"""The base of every error Kit raises on purpose."""

from __future__ import annotations


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
