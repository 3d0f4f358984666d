"""dask-jobqueue is imported from any thread and leaves Ctrl-C alone (a fresh process each)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("dask_jobqueue")

ON_A_THREAD = """
import signal, threading
from kit.cluster._builders import import_dask_jobqueue
before = signal.getsignal(signal.SIGINT)
errors = []
def load():
    try:
        import_dask_jobqueue()
    except Exception as exc:
        errors.append(exc)
thread = threading.Thread(target=load)
thread.start(); thread.join()
assert not errors, errors
assert signal.getsignal(signal.SIGINT) is before
import_dask_jobqueue()
assert signal.getsignal(signal.SIGINT) is before
print("ok")
"""

JOB_SCRIPT_THEN_CTRL_C = """
import os, signal
import kit
kit.cluster.job_script({"env": "slurm", "options": {"cores": 1, "memory": "1GB"}})
try:
    os.kill(os.getpid(), signal.SIGINT)
except KeyboardInterrupt:
    print("KeyboardInterrupt")
"""


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dask_jobqueue_imports_on_a_runs_thread_and_keeps_the_sigint_handler() -> None:
    assert run(ON_A_THREAD).strip() == "ok"


def test_ctrl_c_is_still_a_keyboard_interrupt_after_a_job_queue_is_used() -> None:
    assert run(JOB_SCRIPT_THEN_CTRL_C).strip() == "KeyboardInterrupt"
