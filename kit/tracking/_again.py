"""Send a finished run or sweep to the trackers again, from its folder (``kit export-tracking``).

A tracker that was down, slow or killed while a run went on misses part of
it; the run's folder has all of it. Its ``events.jsonl`` is what the
exporters took as the run went, so the run's last session is handed to them
again, as it happened (its own start time, steps and end); a sweep's trials
are sent in turn under the sweep's parent run. Nothing in the folder is run:
its files are read as data (JSON lines, the stored YAML config).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig

from kit._base.errors import KitError
from kit.events import Event, RunFinished, RunStarted, read_events
from kit.store._rundir import RunDir, SweepDir
from kit.tracking._exporter import Exporter, Exporters
from kit.tracking._spec import Tracking

if TYPE_CHECKING:
    from kit._trials.trial import Trial


def last_session(events: list[Event]) -> list[Event]:
    """Return the events of the run's last session: from its last start to its end.

    A resumed run's ``events.jsonl`` holds each session one after another.

    Examples
    --------
    >>> first = [RunStarted("a", 4, 0, 1), RunFinished("a", "cancelled", 2, 0, 4, 1.0)]
    >>> again = [RunStarted("b", 4, 2, 1), RunFinished("b", "completed", 4, 0, 4, 1.0)]
    >>> [e.run_id for e in last_session(first + again)]
    ['b', 'b']
    """
    starts = [n for n, event in enumerate(events) if isinstance(event, RunStarted)]
    return events[starts[-1] :] if starts else []


def stored_config(folder: Path) -> DictConfig | None:
    """Return a run folder's stored ``config.yaml``, or None when it has none."""
    from kit.config import load_config

    path = RunDir(folder).config
    if path.is_symlink() or not path.is_file():
        return None
    return load_config(path)


def send_run(folder: Path, exporters: list[Exporter]) -> tuple[str, bool]:
    """Hand a finished run's last session to ``exporters``; return a line, and whether all took it.

    A tracker that fails says why in a :class:`~kit.errors.TrackingWarning`;
    the line then says the run was not sent.

    Raises
    ------
    KitError
        When the folder holds no run that ended (no ``RunFinished`` in its
        ``events.jsonl``): there is nothing whole to send yet.
    """
    session = last_session(read_events(RunDir(folder).events))
    if not session or not isinstance(session[-1], RunFinished):
        raise KitError(
            f"{folder} holds no run that ended (its {RunDir.events.name} has no end): "
            "send it once it has, with `kit export-tracking` again"
        )
    for exporter in exporters:
        # Sending is all this does: no run waits behind it, so a slow tracker (a server on
        # a busy machine) is waited for, never reported unsent while it is still writing.
        exporter.finish_wait = None
    group = Exporters(exporters)
    for event in session:
        group(event)
    end = session[-1]
    failed = [exporter.tracker for exporter in exporters if not exporter.sent]
    if not exporters:  # a sweep's tracker left out one found down: said in its warning
        failed = ["its tracker"]
    if failed:
        return f"{folder}: not sent to {' and '.join(failed)} (the warning says why)", False
    return f"{folder}: {end.status}, {end.done} items ({end.failed} failed)", True


def tracking_of(folder: Path, given: Tracking | None) -> Tracking:
    """Return where to send ``folder``: as given, else as its stored config's ``tracking`` says.

    Raises
    ------
    KitError
        When neither says where.
    """
    if given is not None:
        return given
    run = folder if RunDir(folder).holds_run() else _first_trial(folder)
    config = stored_config(run) if run is not None else None
    found = Tracking.of(config.get("tracking")) if config is not None else None
    if found is None:
        raise KitError(
            f"{folder}'s config says no tracker to send it to: give one, e.g. "
            "`--mlflow sqlite:///runs/mlflow.db` or `--tensorboard runs/tensorboard`"
        )
    return found


def _first_trial(folder: Path) -> Path | None:
    for entry in sorted(folder.glob("trial-*")):
        if SweepDir.is_trial_name(entry.name) and RunDir(entry).holds_run():
            return entry
    return None


def send_folder(folder: Path, tracking: Tracking | None = None) -> list[tuple[str, bool]]:
    """Send the finished run or sweep in ``folder`` to its trackers; return a line per run.

    Each line comes with whether the run reached every tracker: a run that
    did not (its tracker failed, or it never ended) says why in its line.

    ``tracking`` (default: the ``tracking`` section of the config stored
    with the run, or with a sweep's first trial) says where. A run goes on in
    the MLflow run its folder names, if the store still has it.

    Raises
    ------
    KitError
        For a folder with no run or sweep, a run that has not ended, or no
        tracker to send to.
    FileNotFoundError
        For a folder that does not exist.

    Examples
    --------
    >>> import pathlib, tempfile, kit
    >>> runs = pathlib.Path(tempfile.mkdtemp())
    >>> _ = kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,3"], output_dir=runs / "s")
    >>> store = f"sqlite:///{runs}/mlflow.db"
    >>> for line, sent in send_folder(runs / "s", Tracking(mlflow=store)):
    ...     print(line, sent)
    /.../s/trial-000: completed, 2 items (0 failed) True
    /.../s/trial-001: completed, 3 items (0 failed) True
    """
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is no folder; check the path")
    where = tracking_of(folder, tracking)
    if RunDir(folder).holds_run():
        return [send_run(folder, where.exporters(folder, stored_config(folder)))]
    if not SweepDir(folder).holds_sweep():
        raise KitError(f"{folder} holds no Kit run or sweep; check the path")
    return _send_sweep(folder, where)


def _first_start(trials: Sequence[Trial]) -> float | None:
    """Return when the earliest of ``trials`` started (its ``RunStarted``), or None."""
    starts = [
        event.started
        for trial in trials
        if RunDir(trial.output_dir).holds_run() and not trial.output_dir.is_symlink()
        for event in read_events(RunDir(trial.output_dir).events)
        if isinstance(event, RunStarted) and event.started
    ]
    return min(starts, default=None)


def _send_sweep(folder: Path, tracking: Tracking) -> list[tuple[str, bool]]:
    from kit.detached._sweep import DetachedSweep
    from kit.tracking._sweep import SweepTracker

    sweep = DetachedSweep(folder)
    record = sweep.record()
    tracker = SweepTracker(tracking, folder, list(record.get("overrides", [])))
    # The parent run starts when the sweep's first trial did, not when it is sent again.
    tracker.start(began=_first_start(sweep.trials))
    sent: list[tuple[str, bool]] = []
    for trial in sweep.trials:
        if not RunDir(trial.output_dir).holds_run() or trial.output_dir.is_symlink():
            continue  # never started: nothing to send
        config = stored_config(trial.output_dir)
        try:
            line, ok = send_run(trial.output_dir, tracker.exporters(trial, config))
            if ok and tracker.uri is not None and tracker.parent_id() is None:
                # The sweep's MLflow run could not be made: its trials went elsewhere only.
                line, ok = f"{trial.output_dir}: not sent to MLflow (the warning says why)", False
            sent.append((line, ok))
        except KitError as exc:
            sent.append((f"{trial.output_dir}: not sent ({exc})", False))
    search = record.get("search") or {}
    metric = search.get("metric") or record.get("metric")
    direction = search.get("direction") or record.get("direction") or "minimize"
    tracker.finish(sweep.partial(), False, metric, direction == "minimize")
    return sent
