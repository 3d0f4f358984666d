"""The files of a run's folder and of a sweep's folder: the one place that names them.

Every module reading or writing a run directory (the store, detached runs,
reports, trackers, the CLI, the widgets) asks :class:`RunDir` or
:class:`SweepDir` for a file's path, as submitit's ``JobPaths`` names a
job's files. Renaming one is a change here alone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_TRIAL_NAME = re.compile(r"trial-[0-9]{3,6}")


class RunDir:
    """The files of one run's output directory.

    Examples
    --------
    >>> folder = RunDir("runs/decode")
    >>> folder.result, folder.ledger
    (PosixPath('runs/decode/result.json'), PosixPath('runs/decode/ledger.jsonl'))
    >>> folder.holds_run()  # no manifest.json there
    False
    """

    #: The lock a driver holds while it owns the folder.
    LOCK = ".lock"
    #: The committed chunk files, one JSON line each: name, positions, size, sha256.
    LEDGER = "ledger.jsonl"
    #: What Kit writes in a run directory and the store checks: none may be a symbolic
    #: link. (``tracking.json`` is read and written link-safely on its own; ``job-logs``
    #: may be a link to a scratch disk.)
    NAMES = (
        LOCK,
        "chunks",
        "manifest.json",
        "config.yaml",
        LEDGER,
        "errors.jsonl",
        "result.json",
        "events.jsonl",
        "report.html",
        "status.json",
        "driver.json",
        "driver.log",
        "job.pkl",
    )

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    @property
    def lock(self) -> Path:
        """The lock file a driver holds while it owns the folder."""
        return self.path / self.LOCK

    @property
    def chunks(self) -> Path:
        """The folder of the stored chunks of records."""
        return self.path / "chunks"

    @property
    def manifest(self) -> Path:
        """What the run is: its items, config hash, record format (``manifest.json``)."""
        return self.path / "manifest.json"

    @property
    def config(self) -> Path:
        """The run's config as given (``config.yaml``)."""
        return self.path / "config.yaml"

    @property
    def ledger(self) -> Path:
        """The committed chunks (``ledger.jsonl``)."""
        return self.path / self.LEDGER

    @property
    def errors(self) -> Path:
        """One line per failed item (``errors.jsonl``)."""
        return self.path / "errors.jsonl"

    @property
    def result(self) -> Path:
        """The run's end: status, stats, summary (``result.json``)."""
        return self.path / "result.json"

    @property
    def events(self) -> Path:
        """The run's event stream, a JSON line each (``events.jsonl``)."""
        return self.path / "events.jsonl"

    @property
    def report(self) -> Path:
        """The run's static dashboard (``report.html``)."""
        return self.path / "report.html"

    @property
    def status(self) -> Path:
        """A detached run's latest progress (``status.json``)."""
        return self.path / "status.json"

    @property
    def driver(self) -> Path:
        """Who drives a detached run: host, pid, start time (``driver.json``)."""
        return self.path / "driver.json"

    @property
    def driver_log(self) -> Path:
        """A detached driver's output (``driver.log``)."""
        return self.path / "driver.log"

    @property
    def job(self) -> Path:
        """A detached run's pickled job (``job.pkl``)."""
        return self.path / "job.pkl"

    @property
    def tracking(self) -> Path:
        """The trackers' ids of this run, so a resume goes on in them (``tracking.json``)."""
        return self.path / "tracking.json"

    @property
    def experiment(self) -> Path:
        """What a run history stored before the run: the config as edited, the items."""
        return self.path / "experiment.json"

    @property
    def job_logs(self) -> Path:
        """Where a job-queue cluster the run started writes its jobs' output."""
        return self.path / "job-logs"

    def holds_run(self) -> bool:
        """Whether a run was started here (its manifest is written)."""
        return self.manifest.exists()


class SweepDir:
    """The files of a sweep's folder (its trials are run folders within).

    Examples
    --------
    >>> folder = SweepDir("runs/beams")
    >>> folder.record, folder.trial(3)
    (PosixPath('runs/beams/sweep.json'), RunDir('runs/beams/trial-003'))
    >>> folder.holds_sweep()
    False
    """

    #: The sweep's own record: its trials, their values and statuses.
    RECORD = "sweep.json"
    #: A search's Optuna study, as a journal.
    STUDY = "optuna.journal"
    #: What Kit itself puts in a sweep folder besides its trials: the lock, a detached
    #: sweep's driver files, a search's study.
    NAMES = frozenset(
        {
            RECORD,
            RunDir.LOCK,
            "driver.json",
            "driver.log",
            "job.pkl",
            STUDY,
            "report.html",
            "tracking.json",
        }
    )

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # A detached sweep's driver files are named as a run's.
        self._as_run = RunDir(self.path)

    def __repr__(self) -> str:
        return f"SweepDir({str(self.path)!r})"

    @property
    def record(self) -> Path:
        """The sweep's record (``sweep.json``)."""
        return self.path / self.RECORD

    @property
    def study(self) -> Path:
        """A search's Optuna study, as a journal (``optuna.journal``)."""
        return self.path / self.STUDY

    @property
    def report(self) -> Path:
        """The sweep's report (``report.html``)."""
        return self.path / "report.html"

    @property
    def driver(self) -> Path:
        """Who drives a detached sweep (``driver.json``)."""
        return self._as_run.driver

    @property
    def driver_log(self) -> Path:
        """A detached sweep driver's output (``driver.log``)."""
        return self._as_run.driver_log

    @property
    def job(self) -> Path:
        """A detached sweep's pickled job (``job.pkl``)."""
        return self._as_run.job

    @property
    def tracking(self) -> Path:
        """The sweep's parent run in the trackers (``tracking.json``)."""
        return self._as_run.tracking

    def trial(self, number: int) -> RunDir:
        """Return the folder of trial ``number``."""
        return RunDir(self.path / f"trial-{number:03d}")

    @staticmethod
    def is_trial_name(name: str) -> bool:
        """Whether ``name`` is a trial folder's name (a safe one: no path in it).

        >>> SweepDir.is_trial_name("trial-007"), SweepDir.is_trial_name("../trial-007")
        (True, False)
        """
        return _TRIAL_NAME.fullmatch(name) is not None

    def holds_sweep(self) -> bool:
        """Whether a sweep, not a run, was started here."""
        return self.record.is_file() and not RunDir(self.path).holds_run()
