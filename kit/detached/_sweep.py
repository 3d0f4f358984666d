"""A handle on a sweep folder from any process: its trials, progress, result, cancel.

What ``kit.attach`` returns for a folder holding ``sweep.json``: a sweep run
by ``kit submit`` (a detached driver), by another notebook, or finished long
ago. Reading it runs no code from the folder: ``sweep.json`` is JSON, each
trial is read as :func:`kit.attach` reads a run, and trial names are checked
to be the sweep's own folders (``trial-NNN``, no link).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kit._base.errors import KitError, StoreError
from kit._base.files import read_json
from kit._base.format import text_table
from kit._base.waiting import WAIT_STEP
from kit._trials.record import read_record
from kit._trials.trial import SweepResult, Trial, TrialState, follow_trials
from kit.detached._run import DriverIdentity, signal_driver
from kit.result import Progress, RunResult, RunStatus
from kit.store._results import read_result
from kit.store._rundir import RunDir, SweepDir
from kit.store._store import RunStore
from kit.store._study import STUDY_NAME, read_journal, require_optuna


class DetachedSweep:
    """The sweep in ``folder``, driven by whichever process runs it (or finished).

    Examples
    --------
    >>> import tempfile, kit
    >>> folder = tempfile.mkdtemp()
    >>> _ = kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,4"], output_dir=folder)
    >>> sweep = kit.attach(folder)
    >>> str(sweep.progress), sweep.done()
    ('2/2 trials done, 0 running', True)
    >>> [r.stats.ok for r in sweep.result(timeout=10).results]
    [2, 4]
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.record()  # a folder that is no sweep says so now, not at the first look

    def __repr__(self) -> str:
        return f"<DetachedSweep {self.folder} {self.progress}>"

    def record(self) -> dict[str, Any]:
        """Return the sweep's ``sweep.json`` as read now, checked but not interpreted."""
        return read_record(self.folder)

    @property
    def trials(self) -> list[Trial]:
        """The sweep's trials so far, as ``sweep.json`` lists them."""
        return [
            Trial(number, tuple(entry["overrides"]), self.folder / entry["name"])
            for number, entry in enumerate(self.record()["trials"])
        ]

    def status_lines(self) -> list[str]:
        """Return what ``kit status`` prints: the sweep's status and progress, its trials."""
        rows = self.rows()
        head = f"{self.folder}: sweep {self.status}, {self.progress}"
        return [head, *(text_table(rows).splitlines() if rows else [])]

    def rows(self) -> list[dict[str, str]]:
        """One row per trial: its name, overrides and status (pending, running, pruned...)."""
        return [
            {
                "trial": entry["name"],
                "overrides": " ".join(entry["overrides"]),
                "status": str(entry.get("status")),
            }
            for entry in self.record()["trials"]
        ]

    @property
    def progress(self) -> Progress:
        """Trials done (failed among them), running and in all, as the sweep's handle says."""
        record = self.record()
        states = [TrialState.read(e.get("status")) for e in record["trials"]]
        total = max(len(record["trials"]), int((record.get("search") or {}).get("trials", 0)))
        running = sum(state.status is RunStatus.RUNNING for state in states)
        done = sum(state.final for state in states)
        failed = sum(state.status is RunStatus.ERROR for state in states)
        return Progress(done, failed, total, self.status, running=running, unit="trials")

    @property
    def status(self) -> RunStatus:
        """``running`` while a process drives the sweep; then how it ended.

        ``cancelled`` when it was stopped (a trial cancelled, its items left:
        they resume when the sweep runs again), ``completed`` when every trial
        ended otherwise, ``error``
        when its driver ended before its trials did and none was cancelled.
        """
        if not self.done():
            return RunStatus.RUNNING
        record = self.record()
        states = [TrialState.read(e.get("status")) for e in record["trials"]]
        total = max(len(states), int((record.get("search") or {}).get("trials", 0)))
        # A trial cancelled (not pruned) was stopped with the sweep: its items are left,
        # whether or not every trial has an end (a cancelled trial's run has one).
        if any(state.status is RunStatus.CANCELLED and not state.pruned for state in states):
            return RunStatus.CANCELLED
        if len(states) == total and all(state.final for state in states):
            return RunStatus.COMPLETED
        return RunStatus.ERROR

    def done(self) -> bool:
        """Whether no process drives the sweep now (it ended, was cancelled or died)."""
        if RunStore(self.folder).busy():
            return False
        driver = read_json(SweepDir(self.folder).driver)
        # A detached driver just started holds no lock yet: alive means not done.
        return not (driver and DriverIdentity(driver).running())

    def result(self, timeout: float | None = None) -> SweepResult:
        """Wait until no process drives the sweep; return its trials read from their folders.

        A trial that ended in error has its message (``sweep.json`` keeps its
        first line) in ``errors``; a pruned trial has status ``pruned``. The
        runner's ``summarize`` is not rebuilt (that would run the config's
        code), so ``against_best`` compares the records' per-item metrics.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the sweep in {self.folder} is still running: {self.progress}")
            time.sleep(WAIT_STEP)
        return self.partial()

    def __iter__(self) -> Iterator[tuple[Trial, RunResult | None]]:
        """Yield each trial with its result (None if it gave none) as it ends, in that order."""
        return follow_trials(self.partial, self.done)

    def partial(self) -> SweepResult:
        """Return the trials as stored now, without waiting (a running trial as far as it got)."""
        record = self.record()
        trials = self.trials
        results: list[RunResult | None] = []
        errors: dict[int, BaseException] = {}
        statuses: dict[int, TrialState] = {}
        for trial, entry in zip(trials, record["trials"], strict=True):
            status = TrialState.read(entry.get("status"))
            result = None
            if not trial.output_dir.is_symlink() and RunDir(trial.output_dir).manifest.exists():
                try:
                    result = read_result(trial.output_dir)
                except (OSError, KitError, ValueError) as exc:
                    errors[trial.number] = exc
            results.append(result)
            if entry.get("error") and not status.pruned:
                errors[trial.number] = KitError(str(entry["error"]))
            if result is not None and status != TrialState(result.status):
                statuses[trial.number] = status
        return SweepResult(trials, results, errors, statuses=statuses, study=None)

    @property
    def study(self) -> Any:
        """A search's ``optuna.Study``, read from its journal (None for a grid)."""
        record = self.record()
        if not record.get("search"):
            return None
        optuna = require_optuna()
        path = SweepDir(self.folder).study
        if path.is_symlink() or not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the search has no study yet")
        return read_journal(
            path, lambda storage: optuna.load_study(study_name=STUDY_NAME, storage=storage)
        )

    def cancel(self, timeout: float = 0.0) -> None:
        """Stop the sweep's detached driver (proven Kit's own); finished trials are kept.

        Wait up to ``timeout`` seconds for the sweep to end, as every handle's
        ``cancel`` does; by default return at once.

        Running trials stop at chunk level and resume when the same sweep is
        run again. A sweep driven by a process that is no detached driver
        (a notebook's) is cancelled there, with its handle's ``cancel()``.

        Raises
        ------
        StoreError
            When Kit cannot prove the recorded process is this sweep's driver.
        """
        if not signal_driver(self.folder):
            holder = RunStore(self.folder).lock_holder()
            if holder is not None:
                raise StoreError(
                    f"the sweep in {self.folder} is driven by process {holder}, not by a "
                    "detached driver; cancel it where it runs (its handle's cancel())"
                )
            return
        deadline = time.monotonic() + timeout
        while not self.done() and time.monotonic() < deadline:
            time.sleep(WAIT_STEP)

    def table(self) -> list[dict[str, str]]:
        """Return :meth:`rows` (a deprecated name, kept for one release)."""
        warnings.warn(
            "DetachedSweep.table() is now rows(), as on a SweepHandle; table() goes in the "
            "next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.rows()

    def read(self) -> SweepResult:
        """Return :meth:`partial` (a deprecated name, kept for one release)."""
        warnings.warn(
            "DetachedSweep.read() is now partial(), as on a SweepHandle; read() goes in the "
            "next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.partial()
