"""``python -m kit._driver OUTPUT_DIR``: the process that drives a detached run or sweep."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.cli import main
from kit.cluster._session import shutdown
from kit.detached._leave import leave
from kit.detached._run import SUBMIT_GRACE, load_job
from kit.detached._status import StatusWriter
from kit.result import RunError
from kit.store._rundir import RunDir
from kit.store._store import RunStore, StoreError


def run_detached(output_dir: Path) -> int:
    """Run the job pickled in ``output_dir`` to its end (the driver process)."""
    # The submitting process holds the directory's lock until driver.json is written.
    deadline = time.monotonic() + SUBMIT_GRACE
    while RunStore(output_dir).busy() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        job = load_job(RunDir(output_dir).job)
    except StoreError as exc:
        print(f"kit: error: {exc}", file=sys.stderr)  # into driver.log, which attach() shows
        return 2
    if "sweep" in job:
        return _run_detached_sweep(job["sweep"])
    handle = job["runner"].prepare(job["indices"], **job["kwargs"])

    def session() -> dict[str, Any] | None:
        return None if handle.session is None else dict(handle.session.describe())

    handle.events.subscribe(StatusWriter(output_dir, {"pid": os.getpid()}, session))
    signal.signal(signal.SIGTERM, lambda *_: handle.cancel())
    handle.start()
    try:
        result = handle.result()
        return 0 if result.stats.failed == 0 else 1
    except RunError:
        return 1
    finally:
        shutdown()


def _run_detached_sweep(argv: Sequence[str]) -> int:
    """Run ``kit sweep *argv`` (a detached sweep's driver); SIGTERM cancels it like Ctrl-C."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    try:
        return main(["sweep", *argv])
    finally:
        shutdown()


if __name__ == "__main__":
    leave(run_detached(Path(sys.argv[1])))
