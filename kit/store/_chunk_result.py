"""What a chunk hands back (:class:`ChunkResult`), and the checks that keep a record storable.

The vocabulary the worker loop, the engine and the run folder share: a
worker makes a chunk's result, the engine folds it in, the store writes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit.result import Index, ItemError


@dataclass
class ChunkResult:
    """Outputs of positions ``start`` to ``start + len(records)`` of a run."""

    start: int
    records: list[Any]
    errors: list[ItemError]
    worker: str
    busy_seconds: float
    #: Per metric name: (sum, count) over the chunk's records (see :func:`metric_sums`).
    metrics: dict[str, tuple[float, int]] = field(default_factory=dict)
    #: The worker's thread that ran it and when it began there (``time.perf_counter`` of
    #: the worker's process): the engine measures from these how fast the cluster starts
    #: tasks (see :class:`kit._engine.pace.StartSpread`). None when not known (read back
    #: from a run folder, made on the driver).
    slot: tuple[int, float] | None = None

    @property
    def stop(self) -> int:
        """One past the last position."""
        return self.start + len(self.records)


def drop_unpicklable(chunk: ChunkResult, indices: Sequence[Index]) -> ChunkResult:
    """Return ``chunk`` with each record that cannot be pickled turned into an item error.

    ``indices`` are the chunk's own. Only records holding something other
    than plain values, numpy values and bytes are tried, so the usual record
    is not pickled twice. A worker does this before Dask sends the chunk
    back: else one bad record fails the whole chunk, as a worker crash would.

    Examples
    --------
    >>> import threading
    >>> chunk = ChunkResult(0, [1, {"lock": threading.Lock()}], [], "0", 0.0)
    >>> print(drop_unpicklable(chunk, [7, 8]).errors[0].message)  # doctest: +ELLIPSIS
    the record['lock'] is a _thread.lock, which cannot be pickled (TypeError: ...)
    """
    return fail_records(chunk, indices, _pickle_problem)


def _pickle_problem(record: Any) -> str | None:
    import cloudpickle

    from kit.store._records import unstorable

    what = unstorable(record)  # plain values, numpy values and bytes always pickle
    if what is None:
        return None
    try:
        cloudpickle.dumps(record)
    except Exception as exc:
        return f"{what}, which cannot be pickled ({type(exc).__name__}: {exc})"
    return None


def fail_records(
    chunk: ChunkResult, indices: Sequence[Index], problem: Callable[[Any], str | None]
) -> ChunkResult:
    """Return ``chunk`` with each record ``problem`` finds fault with turned into an item error.

    ``indices`` are the chunk's own; ``problem(record)`` returns the message,
    or None for a good record. Plain JSON records are never asked about.
    """
    from kit.store._records import is_plain

    failed = {e.position for e in chunk.errors}
    records, errors = list(chunk.records), list(chunk.errors)
    for offset, record in enumerate(chunk.records):
        pos = chunk.start + offset
        if pos in failed or is_plain(record):
            continue
        message = problem(record)
        if message is not None:
            errors.append(
                ItemError(indices[offset], pos, "builtins.TypeError", message, "", chunk.worker)
            )
            records[offset] = None
    if len(errors) == len(chunk.errors):
        return chunk
    errors.sort(key=lambda e: e.position)
    return dataclasses.replace(chunk, records=records, errors=errors)
