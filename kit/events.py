"""The event stream of a run: the one source every view (progress bar, dashboard) reads.

The engine emits small immutable events; views subscribe. A subscriber that
raises is reported once on stderr and never stops the run.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kit._base.files import open_file, read_text
from kit.result import RunStatus


@dataclass(frozen=True)
class RunStarted:
    """A run began: ``total`` items, of which ``resumed`` were already stored."""

    run_id: str
    total: int
    resumed: int
    workers: int
    dashboard: str | None = None
    started: float = 0.0  # wall-clock time (time.time())


@dataclass(frozen=True)
class ChunkFinished:
    """A chunk of items came back from a worker."""

    run_id: str
    start: int
    items: int
    failed: int
    worker: str
    busy_seconds: float
    elapsed: float
    done: int
    failed_total: int
    total: int
    failures: tuple[tuple[Any, str], ...] = ()
    #: Per metric name: (sum, count) over this chunk's records.
    metrics: dict[str, tuple[float, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFinished:
    """A run ended with a final ``status``; ``error`` says what ended a run in error."""

    run_id: str
    status: RunStatus
    done: int
    failed: int
    total: int
    elapsed: float
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        # Plain strings (a replayed events.jsonl, a test) become the enum.
        object.__setattr__(self, "status", RunStatus(self.status))


@dataclass(frozen=True)
class Scalars:
    """Values logged at ``step`` (e.g. a training iteration's mean return): drawn as curves."""

    run_id: str
    step: int
    values: dict[str, float]
    elapsed: float


Event = RunStarted | ChunkFinished | RunFinished | Scalars
EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls for cls in (RunStarted, ChunkFinished, RunFinished, Scalars)
}


def event_to_dict(event: Event) -> dict[str, Any]:
    """Return ``event`` as a JSON-ready dict with its type under ``"event"``.

    Examples
    --------
    >>> event_to_dict(RunFinished("r", "completed", 3, 0, 3, 1.5))["event"]
    'RunFinished'
    """
    data = {"event": type(event).__name__, **asdict(event)}
    if isinstance(event, ChunkFinished):
        data["failures"] = [list(f) for f in event.failures]
        data["metrics"] = {k: list(v) for k, v in event.metrics.items()}
    return data


def event_from_dict(data: dict[str, Any]) -> Event:
    """Inverse of :func:`event_to_dict`."""
    fields = dict(data)
    cls = EVENT_TYPES[fields.pop("event")]
    if cls is ChunkFinished:
        fields["failures"] = tuple(tuple(f) for f in fields.get("failures", ()))
        fields["metrics"] = {k: (v[0], v[1]) for k, v in fields.get("metrics", {}).items()}
    event: Event = cls(**fields)
    return event


class EventLog:
    """A subscriber that appends every event to a JSON-lines file (``events.jsonl``).

    The log lets any process (``kit report``, a dashboard attached to a
    detached run) replay a run's events. It starts at a run's ``RunStarted``,
    so a run that never started, e.g. one refused the directory's lock, writes
    nothing there. A fresh run truncates the file; a resumed one appends, so
    the history of the items it found done (and the report drawn from it) is
    kept: running a completed run again loses nothing.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._open = False

    def __call__(self, event: Event) -> None:
        """Append ``event``; a run's start truncates the file."""
        if isinstance(event, RunStarted):
            self._open = True
        elif not self._open:
            return
        mode = "w" if isinstance(event, RunStarted) and not event.resumed else "a"
        with open_file(self.path, mode) as fh:
            fh.write(json.dumps(event_to_dict(event), default=repr) + "\n")


def event_from_line(line: str | bytes) -> Event | None:
    """Return the event of one line of ``events.jsonl``, or None for a torn or foreign line.

    Examples
    --------
    >>> line = '{"event": "RunStarted", "run_id": "r1", "total": 3, "resumed": 0, "workers": 2}'
    >>> event_from_line(line).total
    3
    >>> event_from_line('{"event": "RunStar') is None  # a crash mid-write
    True
    """
    try:
        return event_from_dict(json.loads(line))
    except (ValueError, KeyError, TypeError):
        return None


def read_events(path: Path) -> list[Event]:
    """Read an ``events.jsonl`` file; a torn last line (a crash mid-write) is skipped."""
    if not path.exists():
        return []
    events = (event_from_line(line) for line in read_text(path).splitlines())
    return [event for event in events if event is not None]


Subscriber = Callable[[Event], None]


class EventStream:
    """Deliver events to subscribers, in order, on the thread that emits them.

    A subscriber that comes late first receives the events so far, in
    order, then the live ones: a view opened after a run ended shows the
    same run as one opened before it started. The history is bounded: past
    ``max_history`` events, consecutive chunk events of the same worker are
    merged in pairs (counts, busy time and metric sums add up, so totals and
    per-worker shares stay exact; only the time grain of the curves coarsens)
    and logged scalars are thinned, keeping the latest.

    Examples
    --------
    >>> stream = EventStream()
    >>> stream.emit(RunStarted("r1", total=3, resumed=0, workers=1))
    >>> seen = []
    >>> unsubscribe = stream.subscribe(seen.append)  # late: gets the start first
    >>> stream.emit(RunFinished("r1", "completed", 3, 0, 3, 0.5))
    >>> [type(e).__name__ for e in seen]
    ['RunStarted', 'RunFinished']
    """

    def __init__(self, max_history: int = 4096) -> None:
        self._subscribers: list[Subscriber] = []
        # Held while delivering, so a subscriber joining mid-emit misses nothing
        # and sees nothing twice; re-entrant for subscribers that emit or subscribe.
        self._lock = threading.RLock()
        self._broken: set[int] = set()
        self._history: list[Event] = []
        self.max_history = max(16, max_history)

    def subscribe(self, callback: Subscriber, *, replay: bool = True) -> Callable[[], None]:
        """Send ``callback`` the events so far (unless ``replay=False``), then every later one.

        Returns a function that unsubscribes it.
        """
        with self._lock:
            if replay:
                for event in list(self._history):
                    self._deliver(callback, event)
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def history(self) -> list[Event]:
        """Return the events a late subscriber would receive now."""
        with self._lock:
            return list(self._history)

    def emit(self, event: Event) -> None:
        """Send ``event`` to every subscriber."""
        with self._lock:
            self._history.append(event)
            if len(self._history) > self.max_history:
                self._history = compact(self._history)
            for callback in list(self._subscribers):
                self._deliver(callback, event)

    def _deliver(self, callback: Subscriber, event: Event) -> None:
        try:
            callback(event)
        except Exception as exc:
            if id(callback) not in self._broken:
                self._broken.add(id(callback))
                print(f"kit: event subscriber {callback!r} failed: {exc!r}", file=sys.stderr)


def merge_chunks(first: ChunkFinished, second: ChunkFinished) -> ChunkFinished:
    """One event standing for two consecutive chunk events (``second`` the later one).

    Examples
    --------
    >>> a = ChunkFinished("r", 0, 4, 1, "w", 0.2, 1.0, 4, 1, 10, metrics={"wer": (1.0, 4)})
    >>> b = ChunkFinished("r", 4, 2, 0, "w", 0.1, 2.0, 8, 1, 10, metrics={"wer": (0.5, 2)})
    >>> m = merge_chunks(a, b)
    >>> m.items, m.failed, m.done, m.elapsed, m.metrics
    (6, 1, 8, 2.0, {'wer': (1.5, 6)})
    """
    metrics = dict(first.metrics)
    for name, (total, count) in second.metrics.items():
        old_total, old_count = metrics.get(name, (0.0, 0))
        metrics[name] = (old_total + total, old_count + count)
    return replace(
        second,
        start=first.start,
        items=first.items + second.items,
        failed=first.failed + second.failed,
        busy_seconds=first.busy_seconds + second.busy_seconds,
        failures=(first.failures + second.failures)[-5:],
        metrics=metrics,
    )


def compact(events: list[Event]) -> list[Event]:
    """Halve the chunk and scalar events of ``events``, keeping what views total up.

    Chunk events merge in pairs per worker (the pair stands at the later
    one's place); every other ``Scalars`` event goes, the latest stays. Run
    starts and ends are kept, and nothing merges across a run's start.
    """
    out: list[Event | None] = []
    waiting: dict[str, int] = {}  # worker -> place in out of its unpaired chunk event
    scalars: list[int] = []
    for event in events:
        if isinstance(event, RunStarted):
            waiting.clear()
        if isinstance(event, ChunkFinished):
            place = waiting.pop(event.worker, None)
            if place is not None:
                earlier = out[place]
                assert isinstance(earlier, ChunkFinished)
                out[place] = None
                event = merge_chunks(earlier, event)
            else:
                waiting[event.worker] = len(out)
        elif isinstance(event, Scalars):
            scalars.append(len(out))
        out.append(event)
    for place in scalars[:-1:2]:
        out[place] = None
    return [event for event in out if event is not None]
