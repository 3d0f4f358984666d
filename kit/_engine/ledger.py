"""The exactly-once ledger of a run: which positions are done, counters, the stop policy.

It knows nothing of Dask or files: dispatchers hand it chunks, the run asks
it whether to stop and for the final :class:`~kit.result.RunResult`.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.result import Index, ItemError, Progress, RunResult, RunStats, RunStatus, WorkerStats
from kit.store._chunk_result import ChunkResult


@dataclass(frozen=True)
class StopPolicy:
    """When a run ends early because items fail.

    Examples
    --------
    >>> StopPolicy(on_error="record", max_failures=3).reason(failed=3, first_error=None)
    '3 items failed (max_failures=3)'
    """

    on_error: str = "record"
    max_failures: int | None = None

    def reason(self, failed: int, first_error: ItemError | None) -> str | None:
        """Why the run must stop now, or None to go on."""
        if first_error is not None and self.on_error == "raise":
            return f"item {first_error.index!r} failed (on_error='raise')"
        if self.max_failures is not None and failed >= self.max_failures:
            return f"{failed} items failed (max_failures={self.max_failures})"
        return None


class Ledger:
    """Fold chunks into a run's result, each position exactly once.

    Thread-safe: a dispatcher accepts chunks on the run's thread while other
    threads read :meth:`progress` or iterate with :meth:`completed`.

    Examples
    --------
    >>> from kit.store._chunk_result import ChunkResult
    >>> ledger = Ledger(range(4), StopPolicy())
    >>> ledger.accept(ChunkResult(0, [10, 11], [], "w0", 0.2))
    2
    >>> ledger.accept(ChunkResult(0, [10, 11], [], "w1", 0.2))  # a copy: counted once
    0
    >>> print(ledger.progress())
    starting cluster: 2/4 items
    """

    def __init__(self, indices: Sequence[Index], policy: StopPolicy) -> None:
        self.indices = indices
        self.policy = policy
        total = len(indices)
        self.records: list[Any] = [None] * total
        self._errors: dict[int, ItemError] = {}
        # One byte per position: exactly-once bookkeeping that stays small at 1M items.
        self._filled = bytearray(total)
        self.done = 0
        self.failed = 0
        self.resumed = 0
        self.chunks = 0
        self._workers: dict[str, WorkerStats] = {}
        # Positions of successful items in completion order, for iterating as they
        # come: 8 bytes each, the records themselves stay in ``records`` only.
        self._stream = array("q")
        self.cond = threading.Condition()
        self.stop_reason: str | None = None
        self.stop_error: ItemError | None = None
        #: The first item error that came back (the class board shows it), or None.
        self.first_error: ItemError | None = None
        self.status = RunStatus.STARTING

    @property
    def total(self) -> int:
        """Number of items asked for."""
        return len(self.indices)

    def progress(self) -> Progress:
        """Items finished (ok or failed), failed, total and status, right now."""
        with self.cond:
            return Progress(self.done, self.failed, self.total, self.status)

    def set_status(self, status: RunStatus) -> None:
        """Move the run to ``status`` and wake anyone waiting on it."""
        with self.cond:
            self.status = status
            self.cond.notify_all()

    def missing(self) -> list[tuple[int, int]]:
        """Ranges of positions not yet done, in order."""
        pending: list[tuple[int, int]] = []
        with self.cond:
            filled, total, pos = self._filled, self.total, 0
            while pos < total:
                start = filled.find(0, pos)  # in C: fast at a million positions
                if start < 0:
                    break
                stop = filled.find(1, start)
                stop = total if stop < 0 else stop
                pending.append((start, stop))
                pos = stop
        return pending

    def is_new(self, chunk: ChunkResult) -> bool:
        """Whether ``chunk`` holds a position not yet done (it is not a copy of one in)."""
        with self.cond:
            return self._filled.find(0, chunk.start, chunk.stop) >= 0

    def accept(self, chunk: ChunkResult, resumed: bool = False) -> int:
        """Fold ``chunk`` in; return how many of its positions were new.

        A chunk that comes back twice (a backup copy, a re-run after a lost
        worker) counts once; a chunk read back from the store counts as resumed.
        """
        errors = {err.position: err for err in chunk.errors}
        new = 0
        first_error: ItemError | None = None
        start, stop = chunk.start, chunk.stop
        with self.cond:
            if not errors and self._filled.find(1, start, stop) < 0:
                # The usual chunk: every item new and none failed. Slices, not a loop
                # per item: on 20,000 trivial items the loop took 15% of the driver thread.
                new = stop - start
                self._filled[start:stop] = b"\x01" * new
                self.records[start:stop] = chunk.records
                self._stream.extend(range(start, stop))
                self.done += new
            else:
                for offset, record in enumerate(chunk.records):
                    pos = chunk.start + offset
                    if self._filled[pos]:
                        continue
                    self._filled[pos] = 1
                    new += 1
                    self.done += 1
                    if pos in errors:
                        self._errors[pos] = errors[pos]
                        self.failed += 1
                        first_error = first_error or errors[pos]
                        self.first_error = self.first_error or errors[pos]
                    else:
                        self.records[pos] = record
                        self._stream.append(pos)
            if resumed:
                self.resumed += new
            elif new:
                old = self._workers.get(chunk.worker, WorkerStats())
                self._workers[chunk.worker] = WorkerStats(
                    old.items + len(chunk.records),
                    old.busy_seconds + chunk.busy_seconds,
                    old.chunks + 1,
                )
                self.chunks += 1
                if self.stop_reason is None:
                    self.stop_reason = self.policy.reason(self.failed, first_error)
                    if self.stop_reason is not None:
                        self.stop_error = first_error
            self.cond.notify_all()
        return new

    @property
    def stopping(self) -> bool:
        """Whether the stop policy has ended the run."""
        return self.stop_reason is not None

    def errors(self) -> list[ItemError]:
        """Every item error so far, in the order of the indices."""
        with self.cond:
            return [self._errors[pos] for pos in sorted(self._errors)]

    def completed(self, finished: Callable[[], bool], wait: float) -> Iterator[list[int]]:
        """Yield batches of positions of successful items, as they complete.

        Ends once ``finished()`` is true and every completed position was yielded.
        """
        cursor = 0
        while True:
            with self.cond:
                while cursor >= len(self._stream) and not finished():
                    self.cond.wait(wait)
                batch = list(self._stream[cursor:])
                ended = finished()
            cursor += len(batch)
            if batch:
                yield batch
            if ended and cursor >= len(self._stream):
                return

    def final_status(self) -> RunStatus:
        """Return the status of a run that ended without an exception."""
        if self.stop_reason is not None:
            return RunStatus.STOPPED
        return RunStatus.COMPLETED if self.done == self.total else RunStatus.CANCELLED

    def result(
        self,
        status: RunStatus,
        wall_seconds: float,
        setup_seconds: float,
        output_dir: Path | None,
    ) -> RunResult:
        """Build the run's result as it stands."""
        with self.cond:
            stats = RunStats(
                items=self.total,
                ok=self.done - self.failed,
                failed=self.failed,
                not_run=self.total - self.done,
                resumed=self.resumed,
                wall_seconds=wall_seconds,
                setup_seconds=setup_seconds,
                chunks=self.chunks,
                workers=dict(sorted(self._workers.items())),
            )
        return RunResult(
            indices=self.indices,
            records=self.records,
            errors=self.errors(),
            stats=stats,
            status=status,
            output_dir=output_dir,
        )
