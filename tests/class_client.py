"""One attendee of a class: a process of its own running jobs on a shared scheduler.

``python -m tests.class_client ADDRESS JOB...`` where each JOB is a JSON
object: ``items`` (how many), ``parallel`` (merged over ``env: remote``,
the address and ``max_envs: 2``), ``runner`` (the Runner's options) and the config of a
:class:`tests.workloads.Paced` env (``factor``, ``sleep``, ``log_dir``,
``log_calls``, ``gate``, ``gate_from``). The jobs run one after the other;
each prints one JSON line: its factor, items, ok, failed, seconds, its
first errors and the warnings it gave. Attendees with one env config share one env per worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from kit.events import RunFinished
from tests.workloads import Affine, Paced, toy_config

ROOT = Path(__file__).resolve().parents[1]


def run_job(address: str, job: dict[str, Any]) -> dict[str, Any]:
    """Run one job; say how it went."""
    job = dict(job)
    items = job.pop("items")
    parallel = {"env": "remote", "address": address, "max_envs": 2, **job.pop("parallel", {})}
    options = job.pop("runner", {})
    runner = Affine(Paced(toy_config(None, **job)), parallel=parallel, **options)
    began = time.monotonic()
    ended: list[RunFinished] = []
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = runner.run(
            items, on_event=lambda e: ended.extend([e] * isinstance(e, RunFinished))
        )
    return {
        "factor": job.get("factor"),
        "items": items,
        "ok": result.stats.ok,
        "failed": result.stats.failed,
        "status": str(result.status),
        "seconds": time.monotonic() - began,
        "errors": [str(error)[:300] for error in result.errors[:3]],
        "warnings": [str(warning.message) for warning in said],
        "reason": ended[-1].error if ended else None,  # what the run's views show
    }


def attendee(address: str, *jobs: dict[str, Any], user: str = "") -> subprocess.Popen[str]:
    """Start an attendee's process running ``jobs`` (as ``JUPYTERHUB_USER`` ``user``, if given)."""
    command = [sys.executable, "-m", "tests.class_client", address, *map(json.dumps, jobs)]
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    if user:
        environ["JUPYTERHUB_USER"] = user
    return subprocess.Popen(command, cwd=ROOT, env=environ, stdout=subprocess.PIPE, text=True)


def reports(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """Wait for an attendee; return its jobs' reports."""
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    return [json.loads(line) for line in out.splitlines()]


def until(condition: Any, what: str, seconds: float = 120) -> None:
    """Wait until ``condition()`` holds (a state, not a time); fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds:.0f} s for {what}"
        time.sleep(0.05)


def main(argv: list[str]) -> int:
    address, *jobs = argv
    for job in jobs:
        print(json.dumps(run_job(address, json.loads(job))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
