"""The event stream of a run: the one source every view (progress bar, dashboard) reads.

The engine emits small immutable events; views subscribe. A subscriber that
raises is reported once on stderr and never stops the run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RunStarted:
    """A run began: ``total`` items, of which ``resumed`` were already stored."""

    run_id: str
    total: int
    resumed: int
    workers: int
    dashboard: str | None = None


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
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFinished:
    """A run ended with ``status`` (completed, cancelled, stopped, error)."""

    run_id: str
    status: str
    done: int
    failed: int
    total: int
    elapsed: float


Event = RunStarted | ChunkFinished | RunFinished
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
