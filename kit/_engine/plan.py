"""Cut pending positions into chunks: many small ones, sized by measured speed.

Guided self-scheduling: each chunk takes a share of what remains (so the last
chunks are small and no worker idles while another finishes a big one), no
more than ``target_seconds`` of work, and no less than ``min_seconds`` (so
trivial items are not drowned in per-chunk overhead).

Estimates can mislead: in a corpus sorted by length the first items are the
cheapest. So the per-item time used is the larger of the mean and the latest
chunk's, and a chunk is at most ``growth`` times the largest one completed
(chunks grow from a one-item probe as evidence comes in, never by a leap;
before any is back, the chunks queued behind the probes hold ``growth``),
except that it may always hold ``min_seconds`` of work up to a ``growth``-th
of the fair share: climbing 1, 4, 16... items on cheap items would cost a
round trip per step for chunks far below the per-chunk overhead.

The driver takes chunks back one thread at a time (``driver_seconds`` each,
measured by the dispatcher as its busy time, not its waits for the cluster's
answers: meanwhile other chunks arrive and are taken back together): with
many workers it must keep up with all of them, or workers idle while it
catches up. So chunks may grow, and are
aimed, to at least ``DRIVER_SHARE * n_workers * driver_seconds`` of work
(at 32 workers and 5 ms: 0.64 s); near the end the fair share shrinks them
to balance the last chunks across workers, but not below
``n_workers * driver_seconds``, where the driver would be busy all the time.
Simulated and measured in benchmarks/bench_engine.py.

Each task also costs the cluster time of its own (the scheduler's, the
worker's: see :mod:`kit._engine.pace`): chunks hold at least
``least_seconds`` of work, ``n_workers * task_seconds / DISPATCH_SHARE``, so
that on many slots of short items the cluster starts tasks well below the
rate it can (at 1,024 slots and 1 ms a task: 1.37 s). Measured in
benchmarks/bench_scale.py.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable

#: Chunks last long enough that taking them back keeps the driver busy 1/DRIVER_SHARE of the time.
DRIVER_SHARE = 4
#: Seconds of the cluster's own time per task until measured (see kit._engine.pace):
#: the scheduler's overhead per task that Dask's documentation warns of (up to about 1 ms).
TASK_SECONDS = 1e-3
#: The share of the cluster's task rate a run's chunks may use. Lower, chunks grow and
#: one slow item delays more of the items around it in its chunk; higher, slots wait for
#: tasks the scheduler has not started yet (at 1,024 slots: 0.5, 0.75 and 1.0 took 1.50,
#: 1.40 and 1.42x the list-scheduling bound, medians of 8 runs of bench_scale's items).
DISPATCH_SHARE = 0.75
#: An item that alone runs this many times its chunk's expected time ends the chunk, which
#: hands back the items it has not started (planned again): it holds back none behind it.
CUT_AFTER = 2.0


class ChunkPlanner:
    """Hand out ``(start, stop)`` position ranges to run next.

    Examples
    --------
    >>> planner = ChunkPlanner([(0, 100)], n_workers=2, chunk_size=30)
    >>> planner.next(), planner.next(), planner.remaining
    ((0, 30), (30, 60), 40)
    """

    def __init__(
        self,
        pending: Iterable[tuple[int, int]],
        n_workers: int,
        chunk_size: int | str = "auto",
        batch_size: int | None = None,
        target_seconds: float = 0.5,
        min_seconds: float = 0.05,
        growth: int = 4,
    ) -> None:
        self._ranges: deque[tuple[int, int]] = deque(r for r in pending if r[1] > r[0])
        self.remaining = sum(stop - start for start, stop in self._ranges)
        self.n_workers = max(1, n_workers)
        self.chunk_size = chunk_size
        self.unit = batch_size or 1
        self.target_seconds = target_seconds
        self.min_seconds = min_seconds
        self.growth = growth
        self._items = 0
        self._busy = 0.0
        self._latest: float | None = None
        self._largest = 0
        #: Chunks planned before any came back (probes first).
        self.blind = 0
        #: Seconds the driver's thread works to take one chunk back (measured, waits left out).
        self.driver_seconds = 0.0
        #: Seconds of the cluster's own time per task (see :mod:`kit._engine.pace`).
        self.task_seconds = TASK_SECONDS

    @property
    def seconds_per_item(self) -> float | None:
        """Measured mean seconds per item, or None before the first chunk returns."""
        return self._busy / self._items if self._items else None

    @property
    def least_seconds(self) -> float:
        """Work a chunk holds at least, so that the cluster starts its tasks at ease.

        >>> planner = ChunkPlanner([(0, 100)], n_workers=1024)
        >>> planner.task_seconds = 0.001  # the cluster's own time per task
        >>> round(planner.least_seconds, 3)  # 1,024 tasks every 1.37 s: 3/4 of what it can start
        1.365
        """
        return self.n_workers * self.task_seconds / DISPATCH_SHARE

    def observe(self, items: int, busy_seconds: float) -> None:
        """Record that a chunk of ``items`` took ``busy_seconds`` in forward."""
        self._items += items
        self._busy += busy_seconds
        if items:
            self._latest = busy_seconds / items
            self._largest = max(self._largest, items)

    def size(self) -> int:
        """Items in the next chunk (before cutting at a range's end)."""
        if isinstance(self.chunk_size, int):
            return max(1, self.chunk_size)
        mean = self.seconds_per_item
        if mean is None or self._latest is None:
            return self._blind_size()
        per_item = max(mean, self._latest, 1e-7)
        # Enough work per chunk for the driver to keep up with every worker: aim at
        # a small share of its time; never below the point where it is fully busy.
        driver = self.n_workers * self.driver_seconds
        # Nor below what the cluster starts at ease: tasks cost it time of their own.
        least = self.least_seconds
        keep_up = max(self.min_seconds, DRIVER_SHARE * driver, least)
        floor = max(self.min_seconds, driver, least)
        fair_share = self.remaining / (2 * self.n_workers)
        size = min(
            max(self.target_seconds, keep_up) / per_item,
            max(fair_share, floor / per_item),
        )
        # Grow by at most ``growth`` times, but always allow ``keep_up`` seconds of
        # work at once: creeping up from one item costs a round trip per step (and
        # the cluster's least, up to the fair share: smaller tasks would queue).
        size = min(
            size,
            max(
                self.growth * self._largest,
                min(keep_up / per_item, fair_share / self.growth),
                min(least / per_item, fair_share),
            ),
        )
        return max(self.unit, math.ceil(size / self.unit) * self.unit)

    def _blind_size(self) -> int:
        """Items in a chunk planned before any came back.

        One item a worker first, to learn the speed; the chunks queued behind
        those probes hold ``growth`` items (what the first probe back would
        allow), but no more than a ``growth``-th of the fair share. One-item
        chunks there too would leave each worker a queue of a couple of items
        while the driver waits for the first probes, and workers idle.
        """
        if self.blind < self.n_workers:
            return self.unit
        fair_share = self.remaining / (2 * self.n_workers)
        size = min(self.growth * self.unit, fair_share / self.growth)
        return max(self.unit, int(size) // self.unit * self.unit)

    def budget(self, items: int) -> float | None:
        """Seconds an item may run before its chunk of ``items`` hands back the rest.

        ``CUT_AFTER`` times the chunk's expected time, and at least ``min_seconds``;
        None (no limit) before the speed is known, for one item, and when
        the user fixed the chunk size.

        Examples
        --------
        >>> planner = ChunkPlanner([(0, 100)], n_workers=2)
        >>> planner.budget(10) is None  # no chunk back yet
        True
        >>> planner.observe(4, 0.4)  # 0.1 s an item
        >>> planner.budget(10)
        2.0
        """
        mean = self.seconds_per_item
        if mean is None or self._latest is None or items < 2 or self.chunk_size != "auto":
            return None
        # The per-item time chunks are sized by: in a corpus sorted by length the
        # mean lags, and a budget from it would cut chunks of merely longer items.
        return max(self.min_seconds, CUT_AFTER * items * max(mean, self._latest))

    def put_back(self, start: int, stop: int) -> None:
        """Plan positions ``start:stop`` again, before the rest (a chunk handed them back).

        Examples
        --------
        >>> planner = ChunkPlanner([(0, 10)], n_workers=1, chunk_size=4)
        >>> planner.next()
        (0, 4)
        >>> planner.put_back(2, 4)
        >>> planner.next(), planner.remaining
        ((2, 4), 6)
        """
        if stop > start:
            self._ranges.appendleft((start, stop))
            self.remaining += stop - start

    def next(self) -> tuple[int, int] | None:
        """Return the next range to run, or None when nothing is left."""
        if not self._ranges:
            return None
        start, stop = self._ranges.popleft()
        end = min(stop, start + self.size())
        if self._latest is None:
            self.blind += 1
        if end < stop:
            self._ranges.appendleft((end, stop))
        self.remaining -= end - start
        return start, end
