"""The event stream of a run: the one source every view (progress bar, dashboard) reads.

The engine emits small immutable events; views subscribe. A subscriber that
raises is reported once on stderr and never stops the run.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


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
    """A run ended with ``status`` (completed, cancelled, stopped, error)."""

    run_id: str
    status: str
    done: int
    failed: int
    total: int
    elapsed: float
    summary: dict[str, Any] = field(default_factory=dict)


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
    detached run) replay a run's events.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, event: Event) -> None:
        """Append ``event``; a run's start truncates the file."""
        mode = "w" if isinstance(event, RunStarted) else "a"
        with self.path.open(mode) as fh:
            fh.write(json.dumps(event_to_dict(event), default=repr) + "\n")


def read_events(path: Path) -> list[Event]:
    """Read an ``events.jsonl`` file; a torn last line (a crash mid-write) is skipped."""
    events: list[Event] = []
    if not path.exists():
        return events
    for line in path.read_text().splitlines():
        try:
            events.append(event_from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return events


Subscriber = Callable[[Event], None]


class EventStream:
    """Deliver events to subscribers, in order, on the thread that emits them.

    Examples
    --------
    >>> stream = EventStream()
    >>> seen = []
    >>> unsubscribe = stream.subscribe(seen.append)
    >>> stream.emit(RunStarted("r1", total=3, resumed=0, workers=1))
    >>> seen[0].total
    3
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._broken: set[int] = set()

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every later event; return an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def emit(self, event: Event) -> None:
        """Send ``event`` to every subscriber."""
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception as exc:
                if id(callback) not in self._broken:
                    self._broken.add(id(callback))
                    print(f"kit: event subscriber {callback!r} failed: {exc!r}", file=sys.stderr)
