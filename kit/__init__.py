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
from kit._engine import RunHandle
from kit._errors import (
    ClusterError,
    DriverLostError,
    KitError,
    NoWorkersError,
    SchedulerLostError,
    SchedulerUnreachableError,
)
from kit._errors import (
    speak_as as _speak_as,
)
from kit._from_config import items_of
from kit._futures import RunFuture, SweepFuture
from kit._sweeps.search import search, submit_search
from kit._sweeps.sweep import SweepHandle, submit_sweep, sweep
from kit._trials import SweepResult, Trial, TrialPruned, TrialState
from kit.cluster import (
    JOB_QUEUES,
    Session,
    SessionState,
    SetupCancelled,
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
from kit.provider import EnvironmentProvider, ProviderSetupError
from kit.result import ItemError, Progress, RunError, RunResult, RunStats, RunStatus, WorkerStats
from kit.runner import Runner
from kit.store import RecordWriter, RunDir, StoreError, StoreWarning, SweepDir

__version__ = "0.1.0"

__all__ = [
    "JOB_QUEUES",
    "ClusterError",
    "Comparison",
    "ConfigError",
    "DetachedRun",
    "DetachedSweep",
    "DriverLostError",
    "EnvironmentProvider",
    "ItemError",
    "KitError",
    "NoWorkersError",
    "Progress",
    "ProviderSetupError",
    "RecordWriter",
    "RunDir",
    "RunError",
    "RunFuture",
    "RunHandle",
    "RunResult",
    "RunStats",
    "RunStatus",
    "Runner",
    "SchedulerLostError",
    "SchedulerUnreachableError",
    "Session",
    "SessionState",
    "SetupCancelled",
    "StoreError",
    "StoreWarning",
    "SweepDir",
    "SweepFuture",
    "SweepHandle",
    "SweepResult",
    "Trial",
    "TrialPruned",
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

_speak_as(__name__, globals(), __all__)
