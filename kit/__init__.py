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

from kit._base.deprecated import moved as _moved
from kit._base.errors import KitError
from kit._base.errors import speak_as as _speak_as
from kit._engine import RunHandle
from kit._from_config import items_of
from kit._sweeps.search import search, submit_search
from kit._sweeps.sweep import SweepHandle, submit_sweep, sweep
from kit._trials.compare import Comparison, compare
from kit._trials.trial import SweepResult, Trial, TrialState
from kit.cluster import Session, get_session, shutdown
from kit.config import ConfigError, load_config
from kit.detached import attach
from kit.launch._futures import RunFuture, SweepFuture
from kit.provider import EnvironmentProvider
from kit.result import ItemError, Progress, RunError, RunResult, RunStats, RunStatus, WorkerStats
from kit.runner import Runner

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "ConfigError",
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
    "SweepFuture",
    "SweepHandle",
    "SweepResult",
    "Trial",
    "TrialState",
    "WorkerStats",
    "attach",
    "compare",
    "get_session",
    "items_of",
    "load_config",
    "search",
    "shutdown",
    "submit_search",
    "submit_sweep",
    "sweep",
]

# Names kit exported before: every error is in kit.errors now (three stay here too),
# folder, cluster, config and detached-run helpers in their wings' namespaces, so
# kit's own surface is the names a notebook starts from.
_MOVED = {
    "JOB_QUEUES": "kit.cluster",
    "job_script": "kit.cluster",
    "scale_out_command": "kit.cluster",
    "SessionState": "kit.cluster",
    "sessions": "kit.cluster",
    "DetachedRun": "kit.detached",
    "DetachedSweep": "kit.detached",
    "config_hash": "kit.config",
    "resolve_config": "kit.config",
    "save_config": "kit.config",
    "to_overrides": "kit.config",
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
