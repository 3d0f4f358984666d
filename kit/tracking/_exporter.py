"""The part every exporter shares: events taken on the run's thread, written on one of its own.

A run's events are delivered on the thread that drives it; a tracker's
writes (a database transaction, a file) must not slow that thread down.
So an exporter only queues each event there and a thread of its own writes
them, at most once per ``interval`` seconds while the run goes (the running
values then, not every chunk's), and everything left as the run ends: the
run's ``RunFinished`` waits for that, so a finished run's result is in the
tracker when ``run()`` returns. A tracker that fails gives one warning and
is not written to again; the run goes on and loses nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import queue
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from kit._base.errors import TrackingWarning as TrackingWarning
from kit.events import ChunkFinished, Event, RunFinished, RunStarted, Scalars

#: Seconds between two writes of the running values while a run goes.
INTERVAL = 1.0
#: Seconds a run's end waits for its exporter to finish writing before it warns and goes on,
#: when this process does the writing (a SQLite store, event files): slow only when the
#: machine is busy, and never stuck.
FINISH_WAIT = 120.0
#: The same for a tracker across the network (an MLflow server): one that is slow or gone
#: never holds a run (or a sweep's next trial) back for long.
REMOTE_FINISH_WAIT = 10.0


@dataclass
class Totals:
    """What a run's chunk events add up to so far: the values an exporter writes.

    Examples
    --------
    >>> totals = Totals()
    >>> totals.add(ChunkFinished("r", 0, 4, 1, "w", 0.2, 2.0, 4, 1, 10, metrics={"wer": (1.0, 4)}))
    >>> totals.running()
    {'items/done': 4.0, 'items/failed': 1.0, 'items/per_second': 2.0, 'running/wer': 0.25}
    """

    resumed: int = 0
    done: int = 0
    failed: int = 0
    elapsed: float = 0.0
    sums: dict[str, tuple[float, int]] = field(default_factory=dict)

    def add(self, event: ChunkFinished) -> None:
        """Count one chunk event in."""
        self.done, self.failed, self.elapsed = event.done, event.failed_total, event.elapsed
        for name, (total, count) in event.metrics.items():
            old_total, old_count = self.sums.get(name, (0.0, 0))
            self.sums[name] = (old_total + total, old_count + count)

    def running(self) -> dict[str, float]:
        """Items done and failed, throughput, and each metric's mean over the items so far."""
        values = {"items/done": float(self.done), "items/failed": float(self.failed)}
        if self.elapsed > 0:
            values["items/per_second"] = (self.done - self.resumed) / self.elapsed
        for name, (total, count) in sorted(self.sums.items()):
            if count:
                values[f"running/{name}"] = total / count
        return values


def numbers(values: dict[str, Any]) -> dict[str, float]:
    """Return the finite numbers among ``values`` (a summary may hold text or lists too).

    Examples
    --------
    >>> numbers({"wer": 0.1, "n": 3, "engine": "whisper", "ok": True, "bad": float("nan")})
    {'wer': 0.1, 'n': 3.0}
    """
    out = {}
    for key, value in values.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and math.isfinite(value):
            out[str(key)] = float(value)
    return out


def warn_stopped(what: str, exc: BaseException, after: str) -> None:
    """Warn that ``what`` stopped for ``exc``, unless this process said so just before.

    A tracker found down moments ago (its error's ``said``, set by
    :func:`kit.tracking._mlflow.probe`) was named then: a sweep's trials that
    find it down too stop without a warning each.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_stopped("MLflow export", OSError("refused"), "The run goes on.")
    >>> str(caught[0].message)
    'kit: MLflow export stopped: OSError: refused. The run goes on.'
    """
    if not getattr(exc, "said", False):
        warnings.warn(
            f"kit: {what} stopped: {type(exc).__name__}: {exc}. {after}",
            TrackingWarning,
            stacklevel=3,
        )


def installed(package: str) -> bool:
    """Return whether ``package`` can be imported, without importing it.

    Examples
    --------
    >>> installed("json"), installed("no_such_package_here")
    (True, False)
    """
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # an import hook that refuses it
        return False


class Exporters:
    """Several exporters as one subscriber: at a run's end they finish side by side.

    Each exporter alone waits for its own end; subscribed one after another,
    a run's end would wait for each in turn.

    Examples
    --------
    >>> group = Exporters([Exporter(), Exporter()])
    >>> group(RunStarted("r", total=0, resumed=0, workers=1))
    >>> group(RunFinished("r", "completed", 0, 0, 0, 0.1))
    >>> len(group.exporters)
    2
    """

    def __init__(self, exporters: list[Exporter]) -> None:
        self.exporters = exporters

    def __call__(self, event: Event) -> None:
        """Hand ``event`` to each; at the run's end, wait for all of them."""
        self.take(event)
        self.finish(event)

    def take(self, event: Event) -> None:
        """Hand ``event`` to each, without waiting.

        Subscribed apart from :meth:`finish` and ahead of the report's writer,
        the exporters write a run's end while its report is drawn.
        """
        for exporter in self.exporters:
            exporter.take(event)

    def finish(self, event: Event) -> None:
        """At the run's end, say its folder is complete and wait for every exporter."""
        if isinstance(event, RunFinished):
            for exporter in self.exporters:
                exporter.wait()


class Exporter:
    """An event subscriber that writes a run to a tracker from a thread of its own.

    Subclasses say what to write: :meth:`open` at the run's start,
    :meth:`write` with the running values (at most every ``interval``
    seconds), :meth:`scalars` for values the run logged itself,
    :meth:`close` at its end with the last running values, and
    :meth:`upload` once the run's folder is complete (its report written).
    Events before the run's ``RunStarted`` (a run refused its folder's
    lock, say) are ignored, as ``events.jsonl`` ignores them.

    Parameters
    ----------
    interval
        Seconds between two writes of the running values.

    Examples
    --------
    >>> from kit.examples.toy import Env, Square
    >>> class Printer(Exporter):
    ...     def close(self, finished, values):
    ...         print(f"{finished.status}: {values['items/done']:.0f} items")
    >>> _ = Square(Env({})).run(5, on_event=Printer())
    completed: 5 items
    """

    #: What the warnings call this tracker.
    tracker = "tracker"

    def __init__(self, *, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.totals = Totals()
        self._queue: queue.SimpleQueue[Event] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._failed = False
        #: Whether the run's end stopped waiting for this exporter (and said so).
        self._given_up = False
        #: Whether the run's end reached the tracker (set on the exporter's thread).
        self.sent = False
        #: Seconds into the run of the last event taken: when the values written were so.
        self.elapsed = 0.0
        self._dirty = False
        self._folder_complete = threading.Event()
        #: CPU seconds the exporter's thread used, and seconds the run's end waited for it.
        self.busy_seconds = 0.0
        self.end_seconds = 0.0

    # ------------------------------------------------------- on the run's thread
    def __call__(self, event: Event) -> None:
        """Take ``event``; at the run's end, wait until everything is written."""
        self.take(event)
        if isinstance(event, RunFinished):
            self.wait()

    def take(self, event: Event) -> None:
        """Queue ``event`` for the exporter's thread (started by the run's start)."""
        if self._failed:
            return
        if self._thread is None:
            if not isinstance(event, RunStarted):
                return
            self._thread = threading.Thread(
                target=self._work, name=f"kit-{self.tracker.lower()}-export", daemon=True
            )
            self._thread.start()
        self._queue.put(event)

    def wait(self) -> None:
        """Say the run's folder is complete (its report written); wait until its end is written.

        Waits at most :attr:`finish_wait` seconds (None: until it is written or failed).
        """
        self._folder_complete.set()
        if self._thread is not None:
            began = time.perf_counter()
            self._thread.join(self.finish_wait)
            self.end_seconds = time.perf_counter() - began
            if self._thread.is_alive():
                # Said once, here, on the run's thread: the exporter's thread, when it
                # ends, says nothing more (its warning would come from nowhere, minutes on).
                self._given_up = True
                warnings.warn(
                    f"kit: {self.tracker} was still being written {self.finish_wait:.0f} s "
                    f"after the run ended ({self.fix}); the run's own folder is complete, and "
                    "the tracker "
                    f"may miss its end: {self.again}",
                    TrackingWarning,
                    stacklevel=2,
                )

    # ------------------------------------------------------- on the exporter's thread
    def _work(self) -> None:
        try:
            self._loop()
        finally:
            self.busy_seconds = time.thread_time()

    def _loop(self) -> None:
        next_write = time.monotonic() + self.interval
        while True:
            try:
                event = self._queue.get(timeout=max(0.0, next_write - time.monotonic()))
            except queue.Empty:
                event = None
            try:
                if event is not None:
                    self._take(event)
                if isinstance(event, RunFinished):
                    return
                if time.monotonic() >= next_write:
                    if self._dirty:
                        self._dirty = False
                        self.write(self.totals.running(), step=self.totals.done)
                    next_write = time.monotonic() + self.interval
            except Exception as exc:
                self.fail(exc)
                return

    def _take(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.totals = Totals(resumed=event.resumed, done=event.resumed)
            self.open(event)
        elif isinstance(event, ChunkFinished):
            self.totals.add(event)
            self.elapsed = max(self.elapsed, event.elapsed)
            self._dirty = True
        elif isinstance(event, Scalars):
            self.elapsed = max(self.elapsed, event.elapsed)
            self.scalars(event.values, step=event.step)
        elif isinstance(event, RunFinished):
            self.totals.done, self.totals.failed = event.done, event.failed
            if event.elapsed > 0:
                self.totals.elapsed = event.elapsed
            self.elapsed = max(self.elapsed, event.elapsed)
            self._dirty = False
            self.close(event, self.totals.running())
            self._folder_complete.wait(FINISH_WAIT)
            self.upload(event)
            self.sent = True

    def fail(self, exc: BaseException) -> None:
        """Warn once that the tracker failed, and write nothing more to it."""
        self._failed = True
        if not self._given_up:
            warn_stopped(
                f"{self.tracker} export",
                exc,
                f"The run goes on and its output directory is complete; {self.fix}, "
                f"then {self.again}",
            )
        with contextlib.suppress(Exception):  # already failing: the warning says so
            self.abandon()

    # ------------------------------------------------------- what subclasses write
    #: Seconds the run's end waits for this exporter at most (None: no bound).
    finish_wait: float | None = FINISH_WAIT
    #: The warning's advice when the tracker fails.
    fix = "check where it writes"
    #: How to send the run to the tracker again from its folder.
    again = "send it again from its folder with `kit export-tracking OUTPUT_DIR`"

    def open(self, started: RunStarted) -> None:
        """Begin the run in the tracker."""

    def write(self, values: dict[str, float], step: int) -> None:
        """Write the running values at ``step`` (items done)."""

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Write values the run logged at its own ``step``."""

    def close(self, finished: RunFinished, values: dict[str, float]) -> None:
        """End the run in the tracker: the last running ``values``, its summary and status."""

    def upload(self, finished: RunFinished) -> None:
        """Send the run's files (its report), once its folder is complete."""

    def abandon(self) -> None:
        """Release what the tracker holds after a failure."""
