"""One attendee of a class: a process of its own running jobs on a shared scheduler.

``python -m tests.class_client ADDRESS JOB...`` where each JOB is a JSON
object: ``items`` (how many), ``parallel`` (merged over ``env: remote``,
the address and ``max_envs: 2``) and the config of a
:class:`tests.workloads.Paced` env (``factor``, ``sleep``, ``log_dir``,
``log_calls``, ``gate``, ``gate_from``). The jobs run one after the other;
each prints one JSON line: its factor, items, ok, failed, seconds and its
first errors. Attendees with one env config share one env per worker.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tests.workloads import Affine, Paced, toy_config


def run_job(address: str, job: dict[str, Any]) -> dict[str, Any]:
    """Run one job; say how it went."""
    job = dict(job)
    items = job.pop("items")
    parallel = {"env": "remote", "address": address, "max_envs": 2, **job.pop("parallel", {})}
    runner = Affine(Paced(toy_config(None, **job)), parallel=parallel)
    began = time.monotonic()
    result = runner.run(items)
    return {
        "factor": job.get("factor"),
        "items": items,
        "ok": result.stats.ok,
        "failed": result.stats.failed,
        "seconds": time.monotonic() - began,
        "errors": [str(error)[:300] for error in result.errors[:3]],
    }


def main(argv: list[str]) -> int:
    address, *jobs = argv
    for job in jobs:
        print(json.dumps(run_job(address, json.loads(job))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
