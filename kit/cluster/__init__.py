"""The cluster: sessions, cluster builders, and the envs each worker builds once.

A :class:`Session` is one cluster and client per distinct ``parallel``
config, kept in an explicit registry (:func:`sessions`, :func:`shutdown`).
The builders make local, remote and job-queue clusters (:data:`JOB_QUEUES`,
:func:`job_script`, :func:`scale_out_command`, :func:`scale_out_config`); the
env plugin makes each worker build a provider's env once.

Examples
--------
>>> from kit.cluster import JOB_QUEUES, sessions
>>> "slurm" in JOB_QUEUES
True
>>> isinstance(sessions(), list)
True
"""

from kit.cluster._board import BOARD_COLUMNS, board_rows, note_check
from kit.cluster._builders import JOB_QUEUES, job_script
from kit.cluster._scale_out import scale_out_command, scale_out_config
from kit.cluster._session import Session, SessionState, get_session, sessions, shutdown
from kit.cluster._teacher import (
    RUN_COLUMNS,
    cancel,
    class_runs,
    env_rows,
    run_rows,
    runs_headline,
    warm,
)

__all__ = [
    "BOARD_COLUMNS",
    "JOB_QUEUES",
    "RUN_COLUMNS",
    "Session",
    "SessionState",
    "board_rows",
    "cancel",
    "class_runs",
    "env_rows",
    "get_session",
    "job_script",
    "note_check",
    "run_rows",
    "runs_headline",
    "scale_out_command",
    "scale_out_config",
    "sessions",
    "shutdown",
    "warm",
]
