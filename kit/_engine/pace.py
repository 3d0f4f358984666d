"""How fast the cluster starts tasks: what a chunk task costs beyond its items.

Each task costs the scheduler and the worker a little time of their own
(Dask's documentation puts the scheduler's share at up to about a
millisecond). On a few slots that is nothing; on a thousand slots of short
items, chunks of half a second would ask for two thousand tasks a second,
more than one scheduler starts, and the slots wait for their next task
while the queue of small tasks drains. So chunks hold at least
``slots * task_seconds / DISPATCH_SHARE`` of work (the planner's
``least_seconds``; :data:`~kit._engine.plan.DISPATCH_SHARE`): the cluster
then starts tasks at no more than that share of the rate it can.

``task_seconds`` starts at :data:`~kit._engine.plan.TASK_SECONDS` and is
measured once, on the first wave of chunks sent while every slot was free
(:class:`StartSpread`): on each worker the slots' first tasks begin one
after another, as fast as the scheduler and that worker start them.
"""

from __future__ import annotations

from collections.abc import Hashable

from kit._engine.plan import ChunkPlanner
from kit.store._chunk_result import ChunkResult

#: Slots that run a one-item probe first; the other slots wait for a probe to come back
#: (so their first chunk is sized), at most as long as starting a probe on every slot takes.
PROBE_SLOTS = 8


class StartSpread:
    """Measure the cluster's seconds per task from when a wave of chunks began on each slot.

    A wave is chunks sent at once while every slot was free. On one worker
    (one clock), the first chunk of each of its slots begins a little after
    the one before: ``n`` slots begun within ``s`` seconds started ``(n - 1) / s``
    tasks a second; the workers start theirs side by side, so the cluster's
    rate is their sum. The measure is taken once at least half the slots
    have begun, and kept from then on.

    Examples
    --------
    >>> spread = StartSpread(slots=8)  # measured once 4 have begun
    >>> spread.began("w0", thread=1, at=10.00)
    >>> spread.began("w0", thread=2, at=10.01)  # 100 tasks a second on w0
    >>> spread.began("w1", thread=1, at=5.000)
    >>> spread.began("w1", thread=2, at=5.010)  # and 100 on w1
    >>> round(spread.task_seconds, 6)  # 200 tasks a second
    0.005
    """

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        #: Seconds of the cluster's own time per task, once measured.
        self.task_seconds: float | None = None
        # Per worker: the slots seen and the first and last time one began.
        self._seen: set[tuple[str, Hashable]] = set()
        self._first: dict[str, tuple[float, float, int]] = {}

    def began(self, worker: str, thread: Hashable, at: float) -> None:
        """Take the time a wave's chunk began on ``worker``'s ``thread`` (its clock)."""
        if self.task_seconds is not None or (worker, thread) in self._seen:
            return  # measured already, or that slot's second chunk: it waited for the first
        self._seen.add((worker, thread))
        low, high, count = self._first.get(worker, (at, at, 0))
        self._first[worker] = (min(low, at), max(high, at), count + 1)
        if 2 * len(self._seen) < self.slots:
            return
        rate = sum(
            (count - 1) / (high - low) for low, high, count in self._first.values() if high > low
        )
        if rate > 0:
            self.task_seconds = 1 / rate


class Pacing:
    """When the slots without a probe wait for one, and the first wave that measures the cluster.

    On more than ``PROBE_SLOTS`` threads, only that many one-item probes go
    out at first; the other slots wait until one comes back, so that their
    first chunks are sized (a thousand probes and small chunks behind them
    would be a burst of tasks the scheduler starts slower than they end),
    but no longer than starting a probe on each of them would take the
    cluster (``threads * task_seconds``): then they get probes too. The
    first chunks sent once a probe is back, on slots that waited, are the
    wave whose starts measure the cluster's time per task (:class:`StartSpread`).

    Examples
    --------
    >>> planner = ChunkPlanner([(0, 1000)], n_workers=16)  # 1 ms a task until measured
    >>> pacing = Pacing()
    >>> planner.blind = 8  # the first 8 probes are planned
    >>> pacing.waits(planner, now=0.0), pacing.waits(planner, now=0.02)  # 16 ms to wait
    (True, False)
    """

    def __init__(self) -> None:
        # Until when the slots without a probe wait for one to come back.
        self._until: float | None = None
        self._spread: StartSpread | None = None
        self._wave: set[str] = set()
        self._opening = self._opened = False

    def waits(self, planner: ChunkPlanner, now: float) -> bool:
        """Whether the next probe ``planner`` plans waits for one out to come back."""
        threads = planner.n_workers
        if threads <= PROBE_SLOTS or planner.blind < PROBE_SLOTS:
            return False
        if self._until is None:
            self._until = now + threads * planner.task_seconds
        return now < self._until

    def wake_in(self, planner: ChunkPlanner, now: float) -> float | None:
        """Seconds until the waiting slots get a probe anyway (None: none waits)."""
        if self._until is None or planner.seconds_per_item is not None or now >= self._until:
            return None  # no wait, or over: the loop must not spin on it
        return self._until - now

    def sending(self, planner: ChunkPlanner) -> bool:
        """Take a send; return whether it plans blind (probes).

        The first send once the speed is known opens the wave, if slots waited.
        """
        blind = planner.seconds_per_item is None and planner.chunk_size == "auto"
        self._opening = False
        if not blind and not self._opened:
            self._opened = True
            if planner.blind <= PROBE_SLOTS < planner.n_workers:
                self._spread = StartSpread(planner.n_workers)
                self._opening = True
        return blind

    def sent(self, key: str) -> None:
        """Count task ``key`` in the wave if it opens now."""
        if self._opening:
            self._wave.add(key)

    def began(self, key: str, chunk: ChunkResult) -> float | None:
        """Take a chunk back; return the cluster's seconds per task once the wave measures it."""
        if key not in self._wave or self._spread is None or chunk.slot is None:
            return None
        self._wave.discard(key)
        self._spread.began(chunk.worker, *chunk.slot)
        if self._spread.task_seconds is not None:
            self._wave.clear()
        return self._spread.task_seconds
