"""Run one chunk of items through ``forward``: the same code inline and on workers."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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

    @property
    def stop(self) -> int:
        """One past the last position."""
        return self.start + len(self.records)


def execute_chunk(
    forward: Callable[..., Any],
    kwargs: dict[str, Any],
    indices: Sequence[Index],
    start: int,
    batch_size: int | None,
    worker: str,
) -> ChunkResult:
    """Call ``forward`` on every item (or batch) of ``indices``; record failures."""
    n = len(indices)
    records: list[Any] = [None] * n
    errors: list[ItemError] = []
    began = time.perf_counter()
    if batch_size is None:
        for j, index in enumerate(indices):
            try:
                records[j] = forward(index, **kwargs)
            except Exception as exc:
                errors.append(ItemError.from_exception(index, start + j, exc, worker))
    else:
        for b in range(0, n, batch_size):
            batch = list(indices[b : b + batch_size])
            try:
                outputs = list(forward(batch, **kwargs))
                if len(outputs) != len(batch):
                    raise ValueError(
                        f"forward returned {len(outputs)} results for a batch of "
                        f"{len(batch)} items; return one result per item"
                    )
                records[b : b + len(batch)] = outputs
            except Exception as exc:
                for k, index in enumerate(batch):
                    errors.append(ItemError.from_exception(index, start + b + k, exc, worker))
    return ChunkResult(start, records, errors, worker, time.perf_counter() - began)
