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
from kit.cluster import (
    JOB_QUEUES,
    Session,
    SessionState,
    get_session,
    job_script,
    scale_out_command,
    sessions,
    shutdown,
)
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
from kit.store import RecordWriter, RunDir, SweepDir

__version__ = "0.1.0"

__all__ = [
    "JOB_QUEUES",
    "Comparison",
    "ConfigError",
    "DetachedRun",
    "DetachedSweep",
    "EnvironmentProvider",
    "ItemError",
    "KitError",
    "Progress",
    "RecordWriter",
    "RunDir",
    "RunError",
    "RunFuture",
    "RunHandle",
    "RunResult",
    "RunStats",
    "RunStatus",
    "Runner",
    "Session",
    "SessionState",
    "SweepDir",
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
    "job_script",
    "load_config",
    "resolve_config",
    "save_config",
    "scale_out_command",
    "search",
    "sessions",
    "shutdown",
    "submit_search",
    "submit_sweep",
    "sweep",
    "to_overrides",
]

# Names kit exported before: every error is in kit.errors now (three stay here too).
_MOVED = {
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
