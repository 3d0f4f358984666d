"""Driving a sweep: start its trials up to its concurrency, take their ends, keep ``sweep.json``.

:class:`SweepDriver` does the work on the trials' threads;
:class:`~kit._sweeps.sweep.SweepHandle`, the handle users hold, reads the
:class:`SweepState` they share, as :class:`~kit._engine.run.RunHandle`
reads what its :class:`~kit._engine.run.Run` does.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit._base.atomic import atomic_file
from kit._base.files import UnsafeFileError
from kit._base.format import first_line
from kit._sweeps.waiting import ReuseQueue, reuse_group
from kit._trials.trial import SweepResult, Trial, TrialCallback, TrialPlan, TrialPruned, TrialState
from kit.dashboard import write_sweep_report
from kit.dashboard._report import ReportWriter, share_bokeh
from kit.events import RunFinished, RunStarted
from kit.launch import RunRequest, assemble, check_resume
from kit.result import RunError, RunResult, RunStatus
from kit.store._rundir import RunDir, SweepDir
from kit.store._store import RunStore
from kit.tracking._exporter import Exporters
from kit.tracking._sweep import SweepTracker


def check_trial_folder(path: Path) -> None:
    """Refuse a trial folder that is a link or not a folder (nothing is written through it).

    Raises
    ------
    UnsafeFileError
        Naming the trial, when ``path`` is a symbolic link or a file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> sweep = pathlib.Path(tempfile.mkdtemp())
    >>> (sweep / "trial-000").symlink_to(tempfile.mkdtemp())
    >>> check_trial_folder(sweep / "trial-000")
    Traceback (most recent call last):
    ...
    kit.errors.UnsafeFileError: .../trial-000 is a symbolic link, ...
    """
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        what = "a symbolic link" if path.is_symlink() else "not a folder"
        raise UnsafeFileError(
            f"{path} is {what}, where Kit keeps trial {path.name}'s run; Kit never writes a "
            "trial through a link (one planted there would write the run elsewhere): remove "
            "it to run the trial again here, or give the sweep a folder of its own"
        )


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep is: its folder and record, its plan, how a trial is built, how many at once.

    The handle users hold and the driver doing the work are both given it.
    """

    folder: Path
    plan: TrialPlan
    build: Callable[[Trial], tuple[Any, Sequence[Any]]]
    concurrency: int
    #: ``sweep.json`` as the driver keeps it (the driver alone writes it).
    record: dict[str, Any]
    on_trial: TrialCallback | None = None


@dataclass
class SweepState:
    """What a sweep's driver writes and its handle reads, under ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Set once the sweep has ended (every trial, or a cancel).
    finished: threading.Event = field(default_factory=threading.Event)
    running: int = 0
    #: No trial is left to start (the plan said so, or could not make one).
    exhausted: bool = False
    cancelled: bool = False
    #: The end was done (a cancel and the last trial's end may both get there).
    ended_once: bool = False
    #: The running and ended trials' run handles, by trial number.
    handles: dict[int, Any] = field(default_factory=dict)
    results: dict[int, RunResult] = field(default_factory=dict)
    errors: dict[int, BaseException] = field(default_factory=dict)
    #: A trial's status where it is not its run's (pruned, say).
    statuses: dict[int, TrialState] = field(default_factory=dict)
    #: Why a trial was stopped early (pruned, or its comparison decided), as said.
    notes: dict[int, str] = field(default_factory=dict)


class SweepDriver:
    """Run a sweep's trials, up to ``concurrency`` at once, and keep its folder.

    It holds the sweep folder's lock from :meth:`start` to the sweep's end
    (``sweep.json`` has one writer), reads back the trials an earlier run
    finished, starts the others as earlier ones end, and at the end writes
    the sweep's report and tells its trackers.
    """

    def __init__(
        self,
        spec: SweepSpec,
        state: SweepState,
        partial: Callable[[], SweepResult],
        tracker: SweepTracker | None = None,
    ) -> None:
        self.spec = spec
        self.state = state
        #: The sweep as it stands (what the trackers are told at the end).
        self.partial = partial
        self.tracker = tracker
        self.store = RunStore(spec.folder)
        self.reports = Reports()
        self.queue = ReuseQueue(lambda trial: reuse_group(self._request(trial)))

    def start(self) -> None:
        """Take the sweep folder's lock, start the first trials.

        Raises
        ------
        StoreError
            If another process drives a sweep in the folder (it holds the lock).
        """
        self.store.lock()  # one driver per sweep folder: sweep.json has one writer
        try:
            restored = self.spec.plan.restore()
            for number, (result, _) in restored.items():
                self._check_read_back(self.spec.plan.trials[number], result)
            self._save()
        except BaseException:
            self.store.unlock()
            raise
        for number, (result, status) in restored.items():
            self.state.results[number] = result
            if status != TrialState(result.status):
                self.state.statuses[number] = status
        if self.tracker is not None:
            self.tracker.start()
        self.launch()

    def _check_read_back(self, trial: Trial, result: RunResult) -> None:
        """Refuse a finished trial made by other code or keywords than this sweep's would be.

        As a run's resume does: the stored trial is read back only if this
        sweep would make the same records (the runner's code, its keywords,
        its config, its items). Its ``result.json`` is then checked against
        those records: its failures counted and its summary made again by the
        runner, so a summary written by hand is never shown or picked as best.
        """
        how = (
            f"delete {trial.output_dir} to run that trial again with this code, or give "
            "this sweep a folder of its own"
        )
        request = self._request(trial)
        check_resume(request, resume=True, how=how)
        where = RunDir(trial.output_dir).result
        if result.stats.failed != len(result.errors):
            raise _not_its_records(
                trial, where, "stats.failed", result.stats.failed, len(result.errors), how
            )
        if result.status != RunStatus.COMPLETED:
            return  # a run stopped early (pruned) stores no summary: nothing to check
        made = json.loads(json.dumps(request.task.summarize(result.records), default=repr))
        stored = json.loads(json.dumps(result.summary, default=repr))
        differ = [k for k in {**made, **stored} if not _same(made.get(k), stored.get(k))]
        if differ:
            key = differ[0]
            raise _not_its_records(
                trial, where, f"summary.{key}", stored.get(key), made.get(key), how
            )

    def _request(self, trial: Trial) -> RunRequest:
        """Return the request of ``trial``'s run: into its folder, exported and reported here.

        The sweep exports its trials itself (nested under it, with their swept
        values) and draws their reports itself, off the trials' path (see Reports).
        """
        runner, indices = self.spec.build(trial)
        return RunRequest.of(runner, indices).replace(
            output_dir=trial.output_dir, tracking=None, draws_report=False
        )

    def launch(self) -> None:
        """Start trials up to ``concurrency``; once none runs and none is left, end the sweep."""
        starting: list[Trial] = []
        with self.state.lock:
            while not self.state.cancelled and not self.state.exhausted:
                if self.state.running >= self.spec.concurrency:
                    break
                try:
                    trial = self.queue.next(self.spec.plan.next)
                except Exception as failed:  # a search that cannot propose: end, keep what ran
                    warnings.warn(
                        f"the sweep could not make its next trial: {failed}; it ends once "
                        "the running trials have",
                        RuntimeWarning,
                        stacklevel=1,
                    )
                    trial = self.queue.next(self.spec.plan.next)  # the plan is done: those waiting
                if not isinstance(trial, Trial):  # None: no trial left; or those left wait
                    self.state.exhausted = trial is None  # on running ones alike (WAITING)
                    break
                if trial.number in self.state.results:
                    continue  # finished in an earlier run of the sweep: read back, not run
                self.state.running += 1
                self.queue.started(trial)
                starting.append(trial)
        if starting:
            # In sweep.json before their folders exist: a driver killed now resumes them
            # with the same values, into the same folders.
            self._save()
        for trial in starting:
            self._start(trial)
        with self.state.lock:
            over = self.state.running == 0 and (self.state.exhausted or self.state.cancelled)
            # Ended once: a cancel and the last trial's end may both get here.
            over, self.state.ended_once = (
                over and not self.state.ended_once,
                self.state.ended_once or over,
            )
        if over:
            self._save()
            self.reports.close()  # the trials' reports are drawn: the sweep's is next
            self._write_report()
            if self.tracker is not None:
                search = self.spec.record.get("search") or self.spec.record
                self.tracker.finish(
                    self.partial(),
                    self.state.cancelled,
                    search.get("metric"),
                    search.get("direction", "minimize") == "minimize",
                )
            self.store.unlock()
            self.state.finished.set()

    def _start(self, trial: Trial) -> None:
        try:
            check_trial_folder(trial.output_dir)  # again: a link may be planted meanwhile
            request = self._request(trial)
            handle = assemble(request)
            exporters = Exporters(
                self.tracker.exporters(trial, request.provider.config)
                if self.tracker is not None
                else []
            )
            handle.events.subscribe(exporters.take)
            self.reports.follow(trial, handle, exporters, request.task.report_sections)
            handle.start()
        except BaseException as exc:
            self._ended(trial, None, exc)
            return
        with self.state.lock:
            self.state.handles[trial.number] = handle
        self._set(trial, TrialState(RunStatus.RUNNING))
        self.spec.plan.watch(trial, handle, request.items)
        handle.add_done_callback(lambda done: self._on_done(trial, done))

    def _on_done(self, trial: Trial, handle: Any) -> None:
        error = handle.exception()
        if error is None:
            self._ended(trial, handle.result(), None)
        elif isinstance(error, RunError):
            # Stopped (max_failures, on_error="raise"): its items are its result.
            self._ended(trial, error.result, error)
        else:
            self._ended(trial, None, error)

    def _ended(self, trial: Trial, result: RunResult | None, exc: BaseException | None) -> None:
        try:
            status, exc = self.spec.plan.ended(trial, result, exc)
        except Exception as failed:  # the study could not take it: say so, go on
            status, exc = TrialState(RunStatus.ERROR), failed
        with self.state.lock:
            self.state.running -= 1
            self.queue.ended(trial)
            if result is not None:
                self.state.results[trial.number] = result
                if status != TrialState(result.status):
                    self.state.statuses[trial.number] = status
            if exc is not None and not isinstance(exc, TrialPruned):
                self.state.errors[trial.number] = exc
            if isinstance(exc, TrialPruned):
                self.state.notes[trial.number] = str(exc)
        self._set(trial, status, exc)
        if self.spec.on_trial is not None:
            try:
                self.spec.on_trial(trial, result, exc)
            except Exception as failed:  # a view's bug must not stop the sweep
                warnings.warn(
                    f"the sweep's on_trial callback raised {failed!r} for {trial.name}; "
                    "the sweep goes on",
                    RuntimeWarning,
                    stacklevel=1,
                )
        self.launch()

    def _set(self, trial: Trial, status: TrialState, error: BaseException | None = None) -> None:
        with self.state.lock:
            entry = self.spec.record["trials"][trial.number]
            entry["status"] = status.word
            entry.pop("error", None)
            if error is not None:  # what a reader in another process shows for it
                entry["error"] = first_line(error)
        self._save()

    def _save(self) -> None:
        with self.state.lock:
            text = json.dumps(self.spec.record, indent=1)
            with atomic_file(SweepDir(self.spec.folder).record) as fh:
                fh.write(text + "\n")

    def _write_report(self) -> None:
        """Write the sweep's report.html (with bokeh); a report that fails is a warning."""
        try:
            write_sweep_report(self.spec.folder)
        except ImportError:
            pass  # no bokeh: `kit report FOLDER` says what to install
        except Exception as exc:
            warnings.warn(
                f"kit: the sweep's report.html could not be written in {self.spec.folder}: {exc}; "
                f"its trials are stored; try `kit report {self.spec.folder}`",
                RuntimeWarning,
                stacklevel=2,
            )


#: A trial to draw the report of: the trial, how it ended, its trackers, its runner's sections.
_Drawn = tuple[Trial, RunFinished, Exporters, tuple[Callable[[Path], str], ...]]


class Reports:
    """Draw each ended trial's ``report.html`` on a thread of the sweep's, one after another.

    A trial's end never waits for its report (drawing one takes about half a
    second of CPU): the next trial starts at once. Once a trial's report is
    drawn, its trackers are told its folder is complete (they upload the
    report and end the trial's run there). The sweep's end waits for all of
    them, so every report is there when the sweep is over.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Drawn | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def follow(
        self,
        trial: Trial,
        handle: Any,
        exporters: Exporters,
        sections: Sequence[Callable[[Path], str]] = (),
    ) -> None:
        """Draw ``trial``'s report (with its runner's ``sections``) once its run has ended."""
        started: list[bool] = []

        def take(event: Any) -> None:
            if isinstance(event, RunStarted):
                started.append(True)
            elif isinstance(event, RunFinished):
                if started:
                    self._put((trial, event, exporters, tuple(sections)))
                else:  # refused before it began (its folder's lock): nothing to draw
                    exporters.finish(event)

        handle.events.subscribe(take)

    def _put(self, item: _Drawn) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._draw, name="kit-sweep-reports", daemon=True
                )
                self._thread.start()
        self._queue.put(item)

    def _draw(self) -> None:
        shared: str | None = None
        while (item := self._queue.get()) is not None:
            trial, finished, exporters, sections = item
            try:
                if RunDir(trial.output_dir).manifest.is_file():  # its folder may have gone
                    if shared is None:  # BokehJS once in the sweep's folder, not in each page
                        try:
                            shared = share_bokeh(trial.output_dir.parent) or ""
                        except Exception:  # a full disk, say: each page inlines it then
                            shared = ""
                    ReportWriter.draw(trial.output_dir, shared or None, sections)
            finally:
                exporters.finish(finished)  # the trackers end the trial's run whatever happened

    def close(self) -> None:
        """Wait until every report asked for is drawn (and the trackers told)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()


def _same(a: Any, b: Any) -> bool:
    """Whether two values read from JSON are equal, a NaN equal to a NaN.

    >>> _same({"wer": float("nan")}, {"wer": float("nan")}), _same([1, 2], [1, 3])
    (True, False)
    """
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _not_its_records(
    trial: Trial, where: Path, field: str, stored: Any, made: Any, how: str
) -> Exception:
    """Return the refusal of a trial whose ``result.json`` says other than its records."""
    from kit.config._errors import error

    return error(
        f"{trial.name}'s result.json does not match its records: its {field} is {stored!r}, its "
        f"records make {made!r}",
        fix=how,
        source=str(where),
    )
