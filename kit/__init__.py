"""Kit: a Jupyter-first experimentation kit.

The core is headless: it imports and runs without Jupyter, ipywidgets or
bokeh, on a laptop, on cluster workers and in batch jobs.

Examples
--------
>>> import kit
>>> cfg = kit.load_config({"parallel": {"env": "local", "n_workers": 2}}, ["parallel.n_workers=3"])
>>> cfg.parallel.n_workers
3
"""

from kit._compare import Comparison, compare
from kit._deprecated import moved as _moved
from kit._engine import RunHandle
from kit._errors import KitError
from kit._errors import (
    speak_as as _speak_as,
)
from kit._from_config import items_of
from kit._futures import RunFuture, SweepFuture
from kit._sweeps.search import search, submit_search
from kit._sweeps.sweep import SweepHandle, submit_sweep, sweep
from kit._trials import SweepResult, Trial, TrialState
from kit.cluster import Session, SessionState, get_session, sessions, shutdown
from kit.config import (
    ConfigError,
    config_hash,
    load_config,
    resolve_config,
    save_config,
    to_overrides,
)
from kit.detached import DetachedRun, DetachedSweep, attach
from kit.provider import EnvironmentProvider
from kit.result import ItemError, Progress, RunError, RunResult, RunStats, RunStatus, WorkerStats
from kit.runner import Runner

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "ConfigError",
    "DetachedRun",
    "DetachedSweep",
    "EnvironmentProvider",
    "ItemError",
    "KitError",
    "Progress",
    "RunError",
    "RunFuture",
    "RunHandle",
    "RunResult",
    "RunStats",
    "RunStatus",
    "Runner",
    "Session",
    "SessionState",
    "SweepFuture",
    "SweepHandle",
    "SweepResult",
    "Trial",
    "TrialState",
    "WorkerStats",
    "attach",
    "compare",
    "config_hash",
    "get_session",
    "items_of",
    "load_config",
    "resolve_config",
    "save_config",
    "search",
    "sessions",
    "shutdown",
    "submit_search",
    "submit_sweep",
    "sweep",
    "to_overrides",
]

# Names kit exported before: every error is in kit.errors now (three stay here too),
# folder and cluster helpers in their wings' namespaces.
_MOVED = {
    "JOB_QUEUES": "kit.cluster",
    "job_script": "kit.cluster",
    "scale_out_command": "kit.cluster",
    "RecordWriter": "kit.store",
    "RunDir": "kit.store",
    "SweepDir": "kit.store",
} | {
    name: "kit.errors"
    for name in (
        "ClusterError",
        "DriverLostError",
        "NoWorkersError",
        "ProviderSetupError",
        "SchedulerLostError",
        "SchedulerUnreachableError",
        "SetupCancelled",
        "StoreError",
        "StoreWarning",
        "TrialPruned",
    )
}

__getattr__ = _moved(__name__, _MOVED)

_speak_as(__name__, globals(), __all__)

from kit import errors as errors  # noqa: E402  (after kit's names: it is built from them)
