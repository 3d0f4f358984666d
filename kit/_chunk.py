"""Run one chunk of items through ``forward``: the same code inline and on workers."""

from __future__ import annotations

import time
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
    busy = time.perf_counter() - began
    return ChunkResult(start, records, errors, worker, busy, metric_sums(records))


def metric_sums(records: Sequence[Any]) -> dict[str, tuple[float, int]]:
    """Sum the per-item metrics of ``records``: the convention views read.

    A record reports metrics when it is a dict with a ``"metrics"`` dict of
    numbers, e.g. ``{"hyp": "...", "metrics": {"wer": 0.25, "rtf": 0.1}}``.
    Other records, and values that are not numbers, are left out.

    Examples
    --------
    >>> metric_sums([{"metrics": {"wer": 0.5}}, {"metrics": {"wer": 0.0, "x": "no"}}, 3])
    {'wer': (0.5, 2)}
    """
    sums: dict[str, list[float]] = {}
    for record in records:
        if type(record) is not dict:
            continue
        metrics = record.get("metrics")
        if type(metrics) is not dict:
            continue
        for name, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total = sums.setdefault(str(name), [0.0, 0])
                total[0] += value
                total[1] += 1
    return {name: (total, int(count)) for name, (total, count) in sums.items()}
