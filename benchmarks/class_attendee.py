"""One attendee of the class benchmark: a process of its own, as a notebook's kernel is.

``python benchmarks/class_attendee.py PARALLEL_JSON ITEMS LOG_DIR [TIMES [GO_FILE]]``
runs ``ITEMS`` items of :class:`Decode` on an env built by :class:`Model` (a
stand-in for a recognizer: its setup takes ``SETUP_SECONDS`` and holds
``MODEL_MB`` of memory; each item takes ``ITEM_SECONDS``), ``TIMES`` times
one after the other (1 by default), and prints one JSON line a run: when its
first result came and when it ended (seconds since it started), when it
started (wall clock), items ok, failed and not run. With ``GO_FILE``, the
process connects first (as an attendee's kernel is up before the class
starts) and starts its runs once that file exists.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kit import EnvironmentProvider, Runner
from kit.events import ChunkFinished

SETUP_SECONDS = 5.0
MODEL_MB = 200
ITEM_SECONDS = 0.05


def build_model(log_dir: str) -> dict[str, Any]:
    """Load the stand-in model: a pause and ``MODEL_MB`` of weights, counted in builds.log."""
    with open(Path(log_dir) / "builds.log", "a") as log:
        log.write(f"{os.getpid()}\n")
    time.sleep(SETUP_SECONDS)
    return {"weights": np.ones(MODEL_MB * 2**20 // 8)}  # touched: resident, as weights are


class Model(EnvironmentProvider):
    env_keys = ("log_dir",)

    def build_env_local(self) -> dict[str, Any]:
        return build_model(self.config.log_dir)

    def make_worker_setup_fn(self) -> Any:
        import functools

        return functools.partial(build_model, str(self.config.log_dir))


class Decode(Runner):
    @staticmethod
    def forward(idx: int, weights: Any) -> int:
        time.sleep(ITEM_SECONDS)
        return idx


def main(argv: list[str]) -> int:
    parallel, items, log_dir = json.loads(argv[0]), int(argv[1]), argv[2]
    if len(argv) > 4:
        from kit.cluster import get_session

        get_session(parallel)  # the kernel is up and connected before the class starts
        print(json.dumps({"ready": True}), flush=True)
        while not Path(argv[4]).exists():
            time.sleep(0.02)
    for _ in range(int(argv[3]) if len(argv) > 3 else 1):
        run_once(Decode(Model({"log_dir": log_dir}), parallel=parallel), items)
    return 0


def run_once(runner: Decode, items: int) -> None:
    """Run ``items`` items; print how it went."""
    began, first = time.perf_counter(), []

    def first_result(event: Any) -> None:
        if isinstance(event, ChunkFinished) and not first:
            first.append(time.perf_counter() - began)

    start_wall = time.time()
    result = runner.run(items, on_event=first_result)
    end = time.perf_counter() - began
    print(
        json.dumps(
            {
                "first": first[0] if first else None,
                "end": end,
                "start_wall": start_wall,
                "ok": result.stats.ok,
                "failed": result.stats.failed,
                "not_run": result.stats.not_run,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    # As a class's recognizer is: imported from a module (benchmarks/ is on PYTHONPATH), so
    # every attendee's Model is one class. A provider defined in __main__ is each
    # process's own, env and all, as an attendee's own notebook code is.
    import class_attendee

    sys.exit(class_attendee.main(sys.argv[1:]))
