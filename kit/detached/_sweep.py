"""A handle on a sweep folder from any process: its trials, progress, result, cancel.

What ``kit.attach`` returns for a folder holding ``sweep.json``: a sweep run
by ``kit submit`` (a detached driver), by another notebook, or finished long
ago. Reading it runs no code from the folder: ``sweep.json`` is JSON, each
trial is read as :func:`kit.attach` reads a run, and trial names are checked
to be the sweep's own folders (``trial-NNN``, no link).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kit._errors import KitError, StoreError
from kit._files import read_json
from kit._trials import SweepResult, Trial, TrialStatus
from kit._waiting import WAIT_STEP
from kit.detached._run import DriverIdentity, signal_driver
from kit.result import RunResult
from kit.store._results import read_result
from kit.store._rundir import RunDir, SweepDir
from kit.store._store import RunStore
from kit.store._study import STUDY_NAME, journal_storage, require_optuna

#: How often result() and cancel() look at the folder again.


class DetachedSweep:
    """The sweep in ``folder``, driven by whichever process runs it (or finished).

    Examples
    --------
    >>> import tempfile, kit
    >>> folder = tempfile.mkdtemp()
    >>> _ = kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,4"], output_dir=folder)
    >>> sweep = kit.attach(folder)
    >>> sweep.progress, sweep.done()
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
        path = SweepDir(self.folder).record
        if path.is_symlink() or not path.is_file():
            raise FileNotFoundError(
                f"{self.folder} holds no Kit sweep ({SweepDir.RECORD}); check the path"
            )
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            entries = record["trials"]
            if not isinstance(entries, list):
                raise TypeError("its trials are no list")
            for entry in entries:
                if not SweepDir.is_trial_name(str(entry["name"])):
                    raise ValueError(f"{entry['name']!r} is not a trial's folder name")
                if not all(isinstance(o, str) for o in entry["overrides"]):
                    raise TypeError(f"{entry['name']}'s overrides are not strings")
        except (ValueError, KeyError, TypeError) as exc:
            raise KitError(f"{path} is not a sweep record Kit can read: {exc}") from None
        return dict(record)

    @property
    def trials(self) -> list[Trial]:
        """The sweep's trials so far, as ``sweep.json`` lists them."""
        return [
            Trial(number, tuple(entry["overrides"]), self.folder / entry["name"])
            for number, entry in enumerate(self.record()["trials"])
        ]

    def table(self) -> list[dict[str, str]]:
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
    def progress(self) -> str:
        """One line: trials done, running (as the sweep's handle says it)."""
        record = self.record()
        counts = Counter(str(e.get("status")) for e in record["trials"])
        total = max(len(record["trials"]), int((record.get("search") or {}).get("trials", 0)))
        pending, running = counts[TrialStatus.PENDING], counts[TrialStatus.RUNNING]
        done = len(record["trials"]) - pending - running
        return f"{done}/{total} trials done, {running} running"

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
        return self.read()

    def read(self) -> SweepResult:
        """Return the trials as stored now, without waiting (a running trial as far as it got)."""
        record = self.record()
        trials = self.trials
        results: list[RunResult | None] = []
        errors: dict[int, BaseException] = {}
        statuses: dict[int, TrialStatus] = {}
        for trial, entry in zip(trials, record["trials"], strict=True):
            status = TrialStatus.read(entry.get("status"))
            result = None
            if not trial.output_dir.is_symlink() and RunDir(trial.output_dir).manifest.exists():
                try:
                    result = read_result(trial.output_dir)
                except (OSError, KitError, ValueError) as exc:
                    errors[trial.number] = exc
            results.append(result)
            if entry.get("error") and status != TrialStatus.PRUNED:
                errors[trial.number] = KitError(str(entry["error"]))
            if result is not None and status != str(result.status):
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
        return optuna.load_study(study_name=STUDY_NAME, storage=journal_storage(path))

    def cancel(self, timeout: float = 60) -> None:
        """Stop the sweep's detached driver (proven Kit's own); finished trials are kept.

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
