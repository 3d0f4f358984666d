"""A real single-node SLURM for the tests (started by make test): its check and parallel section."""

from __future__ import annotations

import getpass
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def slurm_problem() -> str | None:
    """Why SLURM cannot be used here, or None when it is up."""
    if shutil.which("sbatch") is None:
        return "SLURM is not installed (run .ci/system-deps.sh as root)"
    state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, check=False)
    if state.returncode != 0 or not state.stdout.strip():
        return f"SLURM is not running: {state.stderr.strip() or 'no nodes'}"
    if not any(s.rstrip("*~#") in USABLE for s in state.stdout.split()):
        reasons = _run(["sinfo", "-R", "-h"])
        return f"the SLURM node cannot take jobs ({state.stdout.strip()}): {reasons}"
    return None


#: Node states in which a job can start (``sinfo -o %T``).
USABLE = {"idle", "mixed", "allocated", "completing"}


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip()


def _suites_jobs() -> list[str]:
    """``id state reason`` of this user's jobs submitted from this checkout (the tests')."""
    listing = _run(["squeue", "-h", "-u", getpass.getuser(), "-o", "%i %T %R %Z"])
    return [
        line.rsplit(" ", 1)[0]
        for line in listing.splitlines()
        if line.rsplit(" ", 1)[-1] == str(ROOT)
    ]


def clear_queue(timeout: float = 120.0) -> None:
    """Cancel the jobs earlier tests left and wait until they have left the node.

    A test's jobs are cancelled when its cluster closes, but a cancelled job
    holds its core while it is COMPLETING (its worker shutting down), which
    under load takes a while: the next test's jobs would then wait for
    cores, in whatever order the tests run. Only jobs submitted from this
    checkout are touched.
    """
    jobs = [line.split()[0] for line in _suites_jobs()]
    if jobs:
        _run(["scancel", *jobs])
    deadline = time.monotonic() + timeout
    while True:
        left = "; ".join(_suites_jobs())
        if not left:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"earlier tests' SLURM jobs did not leave in {timeout:g} s: {left}")
        time.sleep(0.5)


def slurm_parallel(tmp: Path, **extra: Any) -> dict[str, Any]:
    """A ``parallel`` section for the local SLURM: 1-core jobs, logs under ``tmp``."""
    return {
        "env": "slurm",
        "n_workers": 2,
        "options": {
            "cores": 1,
            "processes": 1,
            "memory": "2GB",
            "queue": "debug",
            "walltime": "00:10:00",
            "job_directives_skip": ["--mem"],
            "scheduler_options": {"host": "127.0.0.1"},
            "log_directory": str(tmp / "slurm-logs"),
            # The test workloads live in this repository, not in an installed package.
            "job_script_prologue": [f"export PYTHONPATH={ROOT}"],
        },
        **extra,
    }
