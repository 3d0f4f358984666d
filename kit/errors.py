"""Every error and warning Kit raises on purpose, in one place.

Each error is a :class:`KitError` and also the builtin it is a kind of, so
code that catches the builtin keeps working, and a tool (the CLI, a notebook
panel) catches ``KitError`` to tell Kit's explained failures from bugs. The
three a notebook meets most are in ``kit`` too (``kit.KitError``,
``kit.ConfigError``, ``kit.RunError``). The tree::

    KitError
    ├── ConfigError (ValueError)               a config key, file or override is wrong
    ├── ProviderSetupError (RuntimeError)      a provider could not build its env
    ├── SetupCancelled                         a run was cancelled while its env was built
    ├── RunError (RuntimeError)                a run stopped early; .result holds its items
    ├── TrialPruned                            a search's pruner stopped a trial
    ├── StoreError (RuntimeError)              an output folder cannot be used for this run
    │   ├── FolderBusyError                    another process writes there now
    │   └── UnsafeFileError                    a file there is a link, or not this user's
    ├── DriverLostError (RuntimeError)         a detached run's driver ended without finishing
    ├── ReuseMismatchError (RuntimeError)      a reused forward output differs from a fresh one
    ├── EnvPoolError (RuntimeError)            an RL env pool spent its restart budget
    ├── ClosedPoolError (RuntimeError)         a command to a pool that was closed
    ├── AlreadyPendingError (RuntimeError)     a command to an env still answering the last
    ├── NothingPendingError (RuntimeError)     recv() with no command in flight
    └── ClusterError (RuntimeError)            the cluster a run needs cannot be had
        ├── NoWorkersError (TimeoutError)      no worker joined in time, or all left
        ├── SchedulerUnreachableError (ConnectionError)
        └── SchedulerLostError (ConnectionError)

    StoreWarning (UserWarning)                 a stored chunk was left out, or a folder is odd
    TrackingWarning (RuntimeWarning)           a tracker could not take a run; the run goes on

Examples
--------
>>> import kit.errors
>>> issubclass(kit.errors.NoWorkersError, (kit.errors.ClusterError, TimeoutError))
True
>>> kit.errors.ConfigError is kit.ConfigError
True
"""

from kit._base.errors import (
    AlreadyPendingError,
    ClosedPoolError,
    ClusterError,
    ConfigError,
    DriverLostError,
    EnvPoolError,
    FolderBusyError,
    KitError,
    NothingPendingError,
    NoWorkersError,
    ProviderSetupError,
    ReuseMismatchError,
    RunError,
    SchedulerLostError,
    SchedulerUnreachableError,
    SetupCancelled,
    StoreError,
    StoreWarning,
    TrackingWarning,
    TrialPruned,
    UnsafeFileError,
)
from kit._base.errors import speak_as as _speak_as

__all__ = [
    "AlreadyPendingError",
    "ClosedPoolError",
    "ClusterError",
    "ConfigError",
    "DriverLostError",
    "EnvPoolError",
    "FolderBusyError",
    "KitError",
    "NoWorkersError",
    "NothingPendingError",
    "ProviderSetupError",
    "ReuseMismatchError",
    "RunError",
    "SchedulerLostError",
    "SchedulerUnreachableError",
    "SetupCancelled",
    "StoreError",
    "StoreWarning",
    "TrackingWarning",
    "TrialPruned",
    "UnsafeFileError",
]

# What kit itself exports too speaks as kit. (kit.ConfigError: ...).
_IN_KIT = ("ConfigError", "KitError", "RunError")

_speak_as(__name__, globals(), [name for name in __all__ if name not in _IN_KIT])
