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
    >>> from kit import ConfigError, KitError, RunError, StoreError
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


class SchedulerLostError(KitError, ConnectionError):
    """The Dask scheduler a run used went away and did not come back in time.

    The chunks completed before are stored (with an ``output_dir``): run
    again to resume.

    Examples
    --------
    >>> issubclass(SchedulerLostError, ConnectionError)
    True
    """
