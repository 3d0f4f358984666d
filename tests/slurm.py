"""A real single-node SLURM for the tests (started by make test): its check and parallel section."""

from __future__ import annotations

import shutil
import subprocess
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
    return None


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
