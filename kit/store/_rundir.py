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
from typing import overload

_TRIAL_NAME = re.compile(r"trial-[0-9]{3,6}")


class _File:
    """One file (or folder) of a run's or a sweep's folder, its name spelled here once.

    On a folder it is that file's path; on the class it is itself, and
    ``name`` is the file's name (``RunDir.result.name == "result.json"``).
    """

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    @overload
    def __get__(self, folder: None, owner: type) -> _File: ...
    @overload
    def __get__(self, folder: RunDir | SweepDir, owner: type) -> Path: ...
    def __get__(self, folder: RunDir | SweepDir | None, owner: type) -> _File | Path:
        return self if folder is None else folder.path / self.name


class RunDir:
    """The files of one run's output directory.

    Examples
    --------
    >>> folder = RunDir("runs/decode")
    >>> folder.result, folder.ledger
    (PosixPath('runs/decode/result.json'), PosixPath('runs/decode/ledger.jsonl'))
    >>> RunDir.result.name
    'result.json'
    >>> folder.holds_run()  # no manifest.json there
    False
    """

    lock = _File(".lock", "The lock file a driver holds while it owns the folder.")
    chunks = _File("chunks", "The folder of the stored chunks of records.")
    manifest = _File("manifest.json", "What the run is: its items, config hash, record format.")
    config = _File("config.yaml", "The run's config as given.")
    ledger = _File(
        "ledger.jsonl",
        "The committed chunk files, one JSON line each: name, positions, size, sha256.",
    )
    errors = _File("errors.jsonl", "One line per failed item.")
    result = _File("result.json", "The run's end: status, stats, summary.")
    events = _File("events.jsonl", "The run's event stream, a JSON line each.")
    report = _File("report.html", "The run's (or the sweep's) static report.")
    status = _File("status.json", "A detached run's latest progress.")
    driver = _File("driver.json", "Who drives a detached run or sweep: host, pid, start time.")
    driver_log = _File("driver.log", "A detached driver's output.")
    job = _File("job.pkl", "A detached run's or sweep's pickled job.")
    tracking = _File(
        "tracking.json", "The trackers' ids of this run (or sweep), so a resume goes on in them."
    )
    experiment = _File(
        "experiment.json",
        "What a run history stored before the run: the config as edited, the items.",
    )
    reuse = _File(
        "reuse.json",
        "What each item's forward output depends on (forward, env, item digests): later "
        "runs reuse it.",
    )
    check = _File(
        "check.json",
        "The latest `kit check` of this run: its verdict and forecast, shown against the run.",
    )
    job_logs = _File(
        "job-logs", "Where a job-queue cluster the run started writes its jobs' output."
    )

    #: The lock a driver holds while it owns the folder.
    LOCK = lock.name
    #: The committed chunk files.
    LEDGER = ledger.name
    #: What Kit writes in a run directory and the store checks: none may be a symbolic
    #: link. (``tracking.json`` is read and written link-safely on its own; ``job-logs``
    #: may be a link to a scratch disk.)
    NAMES = (
        lock.name,
        chunks.name,
        manifest.name,
        config.name,
        ledger.name,
        errors.name,
        result.name,
        events.name,
        report.name,
        status.name,
        driver.name,
        driver_log.name,
        job.name,
        check.name,
    )

    #: A chunk file's name: its first and last position (ten digits each) and format.
    CHUNK_NAME = re.compile(r"[0-9]{10}-[0-9]{10}\.(jsonl|arrow|pkl)")

    def chunk_stem(self, start: int, stop: int) -> Path:
        """Return the path of the chunk of positions ``start:stop``, less its format's suffix."""
        return self.chunks / f"{start:010d}-{stop:010d}"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

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

    record = _File("sweep.json", "The sweep's own record: its trials, their values and statuses.")
    study = _File("optuna.journal", "A search's Optuna study, as a journal.")
    bokeh = _File("bokeh", "BokehJS, once, for the trials' reports (each loads it from here).")
    # A detached sweep's driver files, its report and its trackers' ids are named as a run's.
    report = RunDir.report
    driver = RunDir.driver
    driver_log = RunDir.driver_log
    job = RunDir.job
    tracking = RunDir.tracking

    RECORD = record.name
    STUDY = study.name
    #: What Kit itself puts in a sweep folder besides its trials: the lock, a detached
    #: sweep's driver files, a search's study.
    NAMES = frozenset(
        {
            record.name,
            study.name,
            bokeh.name,
            RunDir.LOCK,
            report.name,
            driver.name,
            driver_log.name,
            job.name,
            tracking.name,
        }
    )

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"SweepDir({str(self.path)!r})"

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
