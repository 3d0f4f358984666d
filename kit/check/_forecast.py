"""Forecast the full run from the check's sample: wall time with an 80% interval, slot-hours."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The interval's share of the forecasts: the middle 80%.
COVERAGE = 0.8
#: How far a machine's speed moves between the check and the run (other work on
#: it, caches, clocks), beyond what the sample tells: the interval is widened by it.
#: On this project's 2-core machine the decoding demo's full run took 6 to 10% longer
#: than its checks' medians; ``benchmarks/bench_check.py`` measures the coverage.
RUN_SPREAD = 0.10


@dataclass(frozen=True)
class Forecast:
    """What the full run will cost, forecast from the check's timed sample.

    Attributes
    ----------
    items, slots
        The full run's items, and the task slots it runs on.
    seconds
        Its wall time: ``(low, median, high)``, the middle 80% of the
        forecasts of resampled samples.
    slot_hours
        Slots times the median wall time, in hours (what a queue bills).
    per_item
        Median forecast seconds of work per item.
    feature
        The item feature times were scaled by (``duration``), or None.
    setup_seconds, chunk_seconds, chunks
        The start (cluster and env, as the check measured them), the cost of
        one chunk beyond its items, and the chunks the engine would cut.
    """

    items: int
    slots: int
    seconds: tuple[float, float, float]
    slot_hours: float
    per_item: float
    feature: str | None
    setup_seconds: float
    chunk_seconds: float
    chunks: int
    #: Other runs on the cluster when it was checked: the run gets its fair share of the slots.
    others: int = 0

    def __str__(self) -> str:
        low, median, high = self.seconds
        by = f", per-item time scaled by {self.feature}" if self.feature else ""
        slots = f"{self.slots} slot{'s' if self.slots != 1 else ''}"
        if self.others:
            slots += f" (its share beside {self.others} other run{'s' if self.others > 1 else ''})"
        return (
            f"{self.items} items on {slots}: {_duration(median)} "
            f"(80%: {_duration(low)} to {_duration(high)}), {slot_time(self.slot_hours)}{by}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return it as plain data (``--json``'s ``forecast``)."""
        low, median, high = self.seconds
        return {
            "items": self.items,
            "slots": self.slots,
            "seconds": {"low": low, "median": median, "high": high},
            "slot_hours": self.slot_hours,
            "per_item_seconds": self.per_item,
            "feature": self.feature,
            "setup_seconds": self.setup_seconds,
            "chunk_seconds": self.chunk_seconds,
            "chunks": self.chunks,
            "others": self.others,
        }


def slot_time(hours: float) -> str:
    """Say slot-hours, as slot-seconds when there are few.

    Examples
    --------
    >>> slot_time(2.5), slot_time(0.0004)
    ('2.5 slot-hours', '1.44 slot-seconds')
    """
    if hours < 0.01:
        return f"{hours * 3600:.3g} slot-seconds"
    return f"{hours:.3g} slot-hours"


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 90:
        return f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def fit(times: Sequence[float], features: Sequence[float] | None) -> tuple[float, float]:
    """Fit ``time = a + b * feature`` (least squares, ``a, b >= 0``); ``b = 0`` without a feature.

    Examples
    --------
    >>> fit([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    (0.0, 1.0)
    >>> fit([2.0, 4.0], None)
    (3.0, 0.0)
    """
    n = len(times)
    mean_t = sum(times) / n
    if not features or len(set(features)) < 2:
        return mean_t, 0.0
    mean_f = sum(features) / n
    spread = sum((f - mean_f) ** 2 for f in features)
    b = sum((f - mean_f) * (t - mean_t) for f, t in zip(features, times, strict=True)) / spread
    a = mean_t - b * mean_f
    if b < 0:
        return mean_t, 0.0
    if a < 0:  # through the origin: time in proportion to the feature
        total_f = sum(features)
        return 0.0, sum(times) / total_f if total_f else 0.0
    return a, b


def count_chunks(items: int, slots: int, per_item: float, chunk_size: int | str) -> int:
    """Return how many chunks the engine cuts ``items`` into when each takes ``per_item`` s.

    Examples
    --------
    >>> count_chunks(100, 2, 0.01, 10)
    10
    """
    from kit._engine.plan import ChunkPlanner

    planner = ChunkPlanner([(0, items)], slots, chunk_size)
    chunks = 0
    while (span := planner.next()) is not None:
        chunks += 1
        planner.observe(span[1] - span[0], (span[1] - span[0]) * per_item)
    return chunks


def forecast(
    times: Sequence[float],
    *,
    items: int,
    slots: int,
    setup_seconds: float,
    chunk_seconds: float,
    chunk_size: int | str = "auto",
    features: Sequence[float] | None = None,
    all_features: Sequence[float] | None = None,
    feature: str | None = None,
    others: int = 0,
    resamples: int = 2000,
    seed: int = 0,
) -> Forecast:
    """Forecast the wall time of ``items`` items on ``slots`` slots from the sample's ``times``.

    Each item's time is ``a + b * feature`` fitted on the sample when
    ``features`` (the sample's) and ``all_features`` (every item's) are
    given, else the sample's mean. The run takes its start, then the work
    and the chunks' own cost spread over the slots, then half an item's
    time for the last one out. ``slots`` are the run's own: its share of a
    cluster ``others`` runs use too. The interval comes from refitting on
    resampled samples (items drawn with replacement), widened by
    :data:`RUN_SPREAD` either way.

    Examples
    --------
    >>> made = forecast([1.0] * 20, items=200, slots=4, setup_seconds=5.0, chunk_seconds=0.0,
    ...                 chunk_size=1)
    >>> made.seconds, made.slot_hours
    ((50.0, 55.5, 61.1), 0.061667)
    """
    import numpy as np

    if not times:
        raise ValueError("a forecast needs the times of at least one item")
    scaled = features is not None and all_features is not None and len(all_features) == items
    sample_t = np.asarray(times, dtype=float)
    sample_f = np.asarray(features, dtype=float) if scaled and features is not None else None
    total_f = float(sum(all_features)) if scaled and all_features is not None else 0.0
    slots = max(1, slots)

    def wall(t: np.ndarray, f: np.ndarray | None) -> tuple[float, float]:
        a, b = fit(t.tolist(), None if f is None else f.tolist())
        work = items * a + b * total_f
        per_item = work / items if items else 0.0
        return setup_seconds + (work + chunk_seconds * chunks) / slots + per_item / 2, per_item

    a, b = fit(sample_t.tolist(), None if sample_f is None else sample_f.tolist())
    chunks = count_chunks(items, slots, (items * a + b * total_f) / max(1, items), chunk_size)
    rng = np.random.default_rng(seed)
    walls = []
    for _ in range(resamples if len(times) > 1 else 1):
        draw = rng.integers(0, len(times), len(times)) if len(times) > 1 else np.arange(1)
        walls.append(wall(sample_t[draw], None if sample_f is None else sample_f[draw])[0])
    tail = (1 - COVERAGE) / 2
    low, median, high = (float(x) for x in np.quantile(walls, [tail, 0.5, 1 - tail]))
    low, high = low * (1 - RUN_SPREAD), high * (1 + RUN_SPREAD)
    _, per_item = wall(sample_t, sample_f)
    return Forecast(
        items=items,
        slots=slots,
        seconds=(round(low, 1), round(median, 1), round(high, 1)),
        slot_hours=round(median * slots / 3600, 6),
        per_item=round(per_item, 6),
        feature=feature if scaled else None,
        setup_seconds=round(setup_seconds, 2),
        chunk_seconds=round(chunk_seconds, 4),
        chunks=chunks,
        others=others,
    )


def finite(values: Sequence[Any]) -> bool:
    """Return whether every value is a finite number (a feature usable for scaling)."""
    return all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values
    )
