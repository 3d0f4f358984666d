"""``python -m kit._driver OUTPUT_DIR``: the process that drives a detached run or sweep."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit._base.errors import FolderBusyError
from kit._base.exits import guarded
from kit._sweeps.request import SweepRequest, trial_line
from kit._trials.trial import sweep_exit_code
from kit.cluster._session import shutdown
from kit.detached._leave import leave
from kit.detached._run import SUBMIT_GRACE, load_job
from kit.detached._status import StatusWriter
from kit.launch import assemble
from kit.result import RunError
from kit.store._rundir import RunDir
from kit.store._store import RunStore, StoreError

if TYPE_CHECKING:
    from kit._sweeps.sweep import SweepHandle


def run_detached(output_dir: Path) -> int:
    """Run the job pickled in ``output_dir`` to its end (the driver process)."""
    # The submitting process holds the directory's lock until driver.json is written.
    deadline = time.monotonic() + SUBMIT_GRACE
    while RunStore(output_dir).busy() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        job = load_job(RunDir(output_dir).job)
        if "sweep" in job:
            return _run_detached_sweep(job["sweep"], output_dir, deadline)
        handle = assemble(job["request"])
        if handle.spec.store is not None:
            take_lock(handle.spec.store, deadline)
    except StoreError as exc:
        print(f"kit: error: {exc}", file=sys.stderr)  # into driver.log, which attach() shows
        return 2

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


def take_lock(store: RunStore, deadline: float) -> None:
    """Take the run's lock for its run (which then holds it), waiting out another submit.

    A second ``kit submit`` into the same folder takes the lock for a moment
    to read ``driver.json`` and refuse; had this driver's run met it there,
    the run would have failed, and the folder been left with no run at all.
    Until ``deadline``, a holder is waited for; then its refusal stands.
    """
    while True:
        try:
            store.lock()
            return
        except StoreError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def submit_waiting(
    request: SweepRequest, folder: Path, deadline: float, on_trial: Any = None
) -> SweepHandle:
    """Start the sweep ``request`` asks for in ``folder``, waiting out another submit's lock.

    As :func:`take_lock` does for a run: a second ``kit submit`` into the
    folder holds its lock for a moment; until ``deadline``, the sweep waits
    for it, and a refusal for any other reason stands at once.
    """
    while True:
        try:
            return request.submit(on_trial=on_trial)
        except FolderBusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _run_detached_sweep(request: SweepRequest, folder: Path, deadline: float) -> int:
    """Start the sweep ``request`` asks for and wait for it; SIGTERM cancels it like Ctrl-C.

    Each trial's line goes to ``driver.log``, as ``kit sweep`` prints it.
    """

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)

    def said(*ended: Any) -> None:
        print(trial_line(*ended), flush=True)

    def run() -> int:
        handle = submit_waiting(request, folder, deadline, said)
        return sweep_exit_code(handle.join().rows())

    try:
        return guarded(run)
    finally:
        shutdown()


if __name__ == "__main__":
    leave(run_detached(Path(sys.argv[1])))
