"""The chunks that come back to a run: stored in one commit, accepted once, told to the views.

A dispatcher hands what came back to :meth:`ChunkIntake.complete`: a chunk
counts as done only once it is on disk (the store's ledger names it) and
the run's :class:`~kit._engine.ledger.Ledger` has accepted it; a copy of one
already in (a backup, a re-run) is neither stored twice nor counted twice.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kit._base.errors import StoreError
from kit._engine.ledger import Ledger
from kit._engine.spec import RunSpec
from kit.events import ChunkFinished, EventStream
from kit.store._chunk_result import ChunkResult

if TYPE_CHECKING:
    from kit.store._store import RunStore

#: Metric names a run sums and draws; the rest are ignored with one warning.
MAX_METRICS = 200


class MetricNames:
    """The first :data:`MAX_METRICS` metric names of a run; a warning, once, of the rest.

    Each name is a curve in every view and a column in the report: a
    record that names its metrics after its item would make thousands.

    Examples
    --------
    >>> names = MetricNames()
    >>> names.keep({"wer": (1.0, 1)})
    {'wer': (1.0, 1)}
    """

    def __init__(self) -> None:
        self.kept: set[str] = set()
        self.warned = False

    def keep(self, metrics: dict[str, tuple[float, int]]) -> dict[str, tuple[float, int]]:
        """Return ``metrics`` but for names past the first :data:`MAX_METRICS`."""
        for name in metrics:
            if name in self.kept:
                continue
            if len(self.kept) < MAX_METRICS:
                self.kept.add(name)
            elif not self.warned:
                self.warned = True
                warnings.warn(
                    f"kit: this run reports more than {MAX_METRICS} metric names; {name!r} and "
                    "the others after them are not summed or drawn: name metrics by what they "
                    "measure, not by item",
                    RuntimeWarning,
                    stacklevel=4,
                )
        return {name: value for name, value in metrics.items() if name in self.kept}


class ChunkIntake:
    """Take a run's chunks as they come back: into the store, the ledger and the event stream.

    Parameters
    ----------
    spec, ledger, events
        The run's: where to store, what is done, where to tell the views.
    started
        When the run started (``time.perf_counter()``): each ``ChunkFinished``
        says how long after it the chunk came back.
    """

    def __init__(self, spec: RunSpec, ledger: Ledger, events: EventStream, started: float) -> None:
        self.spec = spec
        self.ledger = ledger
        self.events = events
        self.started = started
        self.metric_names = MetricNames()

    def complete(self, chunks: Sequence[ChunkResult]) -> None:
        """Fold chunks that came back into the result, store them in one commit, tell the views."""
        store = self.spec.store
        if store is not None:
            fresh: list[ChunkResult] = []
            for chunk in sorted(chunks, key=lambda c: c.start):
                # A copy of a chunk already in (a backup, a re-run) is not stored twice.
                if self.ledger.is_new(chunk) and (not fresh or chunk.start >= fresh[-1].stop):
                    fresh.append(store.writer.admit(chunk, self.spec.job.indices))
            # On disk first: a chunk counts as done only once a crash cannot lose it.
            try:
                store.write_chunks(fresh)
            except StoreError as exc:
                with contextlib.suppress(OSError):  # the disk is full: errors.jsonl may be too
                    self._fold(store, fresh[: exc.committed])  # stored: they are done
                raise
            self._fold(store, fresh)
        else:
            for chunk in chunks:
                self._announce(chunk)

    def _fold(self, store: RunStore, chunks: Sequence[ChunkResult]) -> None:
        errors = [err for chunk in chunks for err in chunk.errors]
        if errors:
            store.append_errors(errors)
        for chunk in chunks:
            self._announce(chunk)

    def _announce(self, chunk: ChunkResult) -> None:
        if self.ledger.accept(chunk) == 0:
            return  # a copy of a chunk already in
        progress = self.ledger.progress()
        metrics = self.metric_names.keep(chunk.metrics)
        self.events.emit(
            ChunkFinished(
                self.spec.run_id,
                chunk.start,
                len(chunk.records),
                len(chunk.errors),
                chunk.worker,
                chunk.busy_seconds,
                time.perf_counter() - self.started,
                progress.done,
                progress.failed,
                progress.total,
                tuple((e.index, f"{e.type}: {e.message}") for e in chunk.errors[:5]),
                metrics,
            )
        )
