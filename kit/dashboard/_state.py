"""What a dashboard shows, folded from events: plain Python, bounded memory, no bokeh."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kit.events import ChunkFinished, Event, RunFinished, RunStarted, Scalars
from kit.result import RunStatus


class Series:
    """An (x, y) series that keeps at most ``max_points`` points.

    When full it keeps every other point and from then on takes one new point
    in two (then four, ...), so a run of any length costs the same memory
    while the whole run stays visible at a coarser grain.

    Examples
    --------
    >>> s = Series(max_points=4)
    >>> for i in range(100):
    ...     s.append(i, i * i)
    >>> len(s.x) <= 4, s.x[0], s.x[-1] >= 90
    (True, 0, True)
    """

    def __init__(self, max_points: int = 500) -> None:
        self.max_points = max(2, max_points)
        self.x: list[float] = []
        self.y: list[float] = []
        self._stride = 1
        self._seen = 0
        self._pending: tuple[float, float] | None = None

    def append(self, x: float, y: float) -> None:
        """Add a point (kept, or folded into the grain when the series is full)."""
        self._seen += 1
        if (self._seen - 1) % self._stride:
            self._pending = (x, y)  # the latest point always shows, see points()
            return
        self._pending = None
        self.x.append(x)
        self.y.append(y)
        if len(self.x) > self.max_points:
            self.x = self.x[::2]
            self.y = self.y[::2]
            self._stride *= 2

    def points(self) -> tuple[list[float], list[float]]:
        """Return copies of x and y, ending with the latest point."""
        x, y = list(self.x), list(self.y)
        if self._pending is not None:
            x.append(self._pending[0])
            y.append(self._pending[1])
        return x, y


@dataclass
class WorkerView:
    """One worker's share of a run."""

    items: int = 0
    busy_seconds: float = 0.0
    chunks: int = 0


@dataclass
class Snapshot:
    """A consistent copy of a dashboard's state, for drawing.

    Examples
    --------
    >>> print(DashboardState().snapshot().status)
    None
    """

    run_id: str
    #: The run's status; ``None`` while no run has been seen (views say "waiting").
    status: RunStatus | None
    total: int
    done: int
    failed: int
    resumed: int
    elapsed: float
    items_per_second: float
    eta_seconds: float | None
    dask_dashboard: str | None
    throughput: tuple[list[float], list[float]]
    progress: tuple[list[float], list[float]]
    workers: dict[str, WorkerView]
    failures: list[tuple[Any, str]]
    metrics: dict[str, tuple[list[float], list[float]]]
    metric_means: dict[str, float]
    summary: dict[str, Any] = field(default_factory=dict)
    #: What each metric's x is: "items" (a running mean over items done) or "step" (logged).
    metric_axis: dict[str, str] = field(default_factory=dict)
    #: What ended a run in error (its exception, one line).
    error: str | None = None


class DashboardState:
    """Fold a run's events into what the dashboard shows.

    It is an event subscriber (``handle.events.subscribe(state)``) and is
    safe to read from another thread through :meth:`snapshot`.

    Examples
    --------
    >>> from kit.events import RunStarted, ChunkFinished
    >>> state = DashboardState()
    >>> state(RunStarted("r", total=10, resumed=0, workers=2))
    >>> state(ChunkFinished("r", 0, 4, 1, "0", 0.2, 0.5, 4, 1, 10,
    ...                     failures=((2, "boom"),), metrics={"wer": (1.0, 4)}))
    >>> snap = state.snapshot()
    >>> snap.done, snap.failed, snap.workers["0"].items, snap.failures, snap.metric_means
    (4, 1, 4, [(2, 'boom')], {'wer': 0.25})
    """

    def __init__(
        self, max_points: int = 500, max_failures: int = 20, window_seconds: float = 5.0
    ) -> None:
        self.max_points = max_points
        self.window_seconds = window_seconds
        self._lock = threading.Lock()
        self._failures: deque[tuple[Any, str]] = deque(maxlen=max_failures)
        self.version = 0
        self._reset("", 0, 0, None)

    def _reset(self, run_id: str, total: int, resumed: int, dashboard: str | None) -> None:
        self.run_id = run_id
        self.status: RunStatus | None = RunStatus.RUNNING if run_id else None
        self.total = total
        self.done = resumed
        self.failed = 0
        self.resumed = resumed
        self.elapsed = 0.0
        self.dask_dashboard = dashboard
        self.throughput = Series(self.max_points)
        self.progress = Series(self.max_points)
        self.workers: dict[str, WorkerView] = {}
        self._failures.clear()
        self._metric_sums: dict[str, list[float]] = {}
        self.metrics: dict[str, Series] = {}
        self._latest: dict[str, float] = {}  # logged Scalars: the last value of each
        self._window: deque[tuple[float, int]] = deque()
        self.summary: dict[str, Any] = {}
        self.error: str | None = None
        # Seconds of earlier sessions of the run (a resume goes on from them).
        self._offset = 0.0

    def _go_on(self, event: RunStarted) -> None:
        """Fold in a resume of the run so far: its items, metrics and curves go on.

        A run folder's ``events.jsonl`` holds each session of the run, one after
        the other; the time axis continues from where the last one stopped.
        """
        self._offset = self.elapsed
        self.run_id, self.status, self.total = event.run_id, RunStatus.RUNNING, event.total
        self.done = self.resumed = event.resumed
        self.dask_dashboard = event.dashboard
        self._window.clear()
        self.summary = {}
        self.error = None

    def __call__(self, event: Event) -> None:
        """Fold one event in."""
        with self._lock:
            if isinstance(event, RunStarted):
                if self.run_id and event.resumed:
                    self._go_on(event)
                else:
                    self._reset(event.run_id, event.total, event.resumed, event.dashboard)
                self.progress.append(self._offset, event.resumed)
                self._window.append((self._offset, event.resumed))
            elif isinstance(event, ChunkFinished):
                self._chunk(event)
            elif isinstance(event, Scalars):
                for name, value in event.values.items():
                    self.metrics.setdefault(name, Series(self.max_points)).append(
                        event.step, float(value)
                    )
                    self._latest[name] = float(value)
            elif isinstance(event, RunFinished):
                self.status = event.status
                self.error = event.error
                self.done, self.failed = event.done, event.failed
                self.elapsed = self._offset + event.elapsed
                self.total = event.total
                self.summary = dict(event.summary)
                self.progress.append(self.elapsed, event.done)
            self.version += 1

    def _chunk(self, event: ChunkFinished) -> None:
        self.done, self.failed = event.done, event.failed_total
        self.elapsed = self._offset + event.elapsed
        worker = self.workers.setdefault(event.worker, WorkerView())
        worker.items += event.items
        worker.busy_seconds += event.busy_seconds
        worker.chunks += 1
        self._failures.extend(event.failures)
        self._window.append((self.elapsed, event.done))
        # Keep one point at or before the window's start, to read the count there.
        start = self.elapsed - self.window_seconds
        while len(self._window) > 2 and self._window[1][0] <= start:
            self._window.popleft()
        self.throughput.append(self.elapsed, self._rate())
        self.progress.append(self.elapsed, event.done)
        for name, (total, count) in event.metrics.items():
            sums = self._metric_sums.setdefault(name, [0.0, 0])
            sums[0] += total
            sums[1] += count
            series = self.metrics.setdefault(name, Series(self.max_points))
            series.append(event.done, sums[0] / sums[1] if sums[1] else 0.0)

    def _rate(self) -> float:
        """Items per second over the last ``window_seconds`` (the whole run while shorter).

        A rate per chunk arrival would spike whenever two chunks land
        together (a few ms apart); over a fixed window it reads as the work.
        """
        t1, d1 = self._window[-1]
        start = t1 - self.window_seconds
        ta, da = self._window[0]
        if ta >= start or len(self._window) < 2:  # the run is younger than the window
            return (d1 - da) / (t1 - ta) if t1 > ta else 0.0
        tb, db = self._window[1]  # ta < start < tb (see _chunk): the count at start
        return (d1 - (da + (db - da) * (start - ta) / (tb - ta))) / self.window_seconds

    def starting(self) -> None:
        """Say the run is starting (its cluster, its env): nothing to plot yet."""
        with self._lock:
            if not self.run_id:
                self.status = RunStatus.STARTING
                self.version += 1

    def snapshot(self) -> Snapshot:
        """Return a consistent copy of the state."""
        with self._lock:
            ran = self.done - self.resumed
            spent = self.elapsed - self._offset  # this session's: its items are `ran`
            rate = ran / spent if spent > 0 else 0.0
            left = self.total - self.done
            eta = left / rate if rate > 0 and self.status is RunStatus.RUNNING else None
            return Snapshot(
                run_id=self.run_id,
                status=self.status,
                total=self.total,
                done=self.done,
                failed=self.failed,
                resumed=self.resumed,
                elapsed=self.elapsed,
                items_per_second=rate,
                eta_seconds=eta,
                dask_dashboard=self.dask_dashboard,
                throughput=self.throughput.points(),
                progress=self.progress.points(),
                workers={
                    k: WorkerView(v.items, v.busy_seconds, v.chunks)
                    for k, v in self.workers.items()
                },
                failures=list(self._failures),
                metrics={k: s.points() for k, s in self.metrics.items()},
                metric_means={
                    **{k: v[0] / v[1] for k, v in self._metric_sums.items() if v[1]},
                    **self._latest,
                },
                summary=dict(self.summary),
                metric_axis={
                    k: "items" if k in self._metric_sums else "step" for k in self.metrics
                },
                error=self.error,
            )
