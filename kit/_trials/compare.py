"""Compare two runs over the same items: the difference of a metric, with a paired bootstrap."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kit.result import Index, RunResult

Summarize = Callable[[list[Any]], dict[str, Any]]
#: Fewer items in common than this, and an interval is said to mean little (a warning).
FEW = 5
#: Resampled indices held at once, at most (a block of resamples at a time).
BLOCK = 4_000_000


@dataclass(frozen=True)
class Comparison:
    """How run ``b`` differs from run ``a`` on ``metric``, over the items both completed.

    ``difference`` is ``b - a``; ``low`` and ``high`` bound it with the
    given ``confidence`` (a percentile interval of the paired bootstrap);
    ``p_better`` is the share of resamples in which ``b`` is better (lower
    with ``minimize``). An interval that holds 0 says the runs cannot be told
    apart on these items.

    Examples
    --------
    >>> found = Comparison("wer", 0.12, 0.10, -0.02, -0.035, -0.006, 0.95, 0.998, 50, 2000, True)
    >>> print(found)  # doctest: +NORMALIZE_WHITESPACE
    wer: 0.12 -> 0.1, difference -0.020 [-0.035, -0.006] (95% paired bootstrap, 50 items,
    2000 resamples); b lower in 99.8% of resamples
    """

    metric: str
    a: float
    b: float
    difference: float
    low: float
    high: float
    confidence: float
    p_better: float
    items: int
    resamples: int
    minimize: bool
    #: ``"bootstrap"`` (valid once, at the end) or ``"anytime"`` (valid at every look).
    method: str = "bootstrap"

    @property
    def decided(self) -> bool:
        """Whether the interval leaves out zero: one run is better (meaningful when ``anytime``)."""
        return self.low > 0 or self.high < 0

    @property
    def interval(self) -> str:
        """The difference and its interval, written with one number of decimals.

        Enough decimals that the interval's width shows two digits:
        ``+0.06 [-0.05, +0.17]``, never ``+0.05786 [-0.05462, +0.17]``.

        Examples
        --------
        >>> found = Comparison("wer", 0.3, 0.36, 0.05786, -0.05462, 0.17, 0.95, 0.2, 9, 2000, True)
        >>> found.interval
        '+0.06 [-0.05, +0.17]'
        """
        return interval_text(self.difference, self.low, self.high)

    def __str__(self) -> str:
        better = "lower" if self.minimize else "higher"
        if self.method == "anytime":
            verdict = "not decided"
            if self.decided:
                verdict = "b lower" if self.high < 0 else "b higher"
            return (
                f"{self.metric}: {self.a:.4g} -> {self.b:.4g}, difference {self.interval} "
                f"({self.confidence:.0%} anytime-valid, {self.items} items); {verdict}"
            )
        return (
            f"{self.metric}: {self.a:.4g} -> {self.b:.4g}, difference {self.interval} "
            f"({self.confidence:.0%} paired bootstrap, "
            f"{self.items} items, {self.resamples} resamples); b {better} in "
            f"{self.p_better:.1%} of resamples"
        )


def interval_text(difference: float, low: float, high: float) -> str:
    """Write a difference and its interval with one number of decimals (see ``interval``).

    Examples
    --------
    >>> interval_text(0.0, 0.0, 0.0), interval_text(-0.9, -0.9, -0.9)
    ('+0 [+0, +0]', '-0.9 [-0.9, -0.9]')
    >>> interval_text(12.5, 3.25, 20.0)
    '+12 [+3, +20]'
    """
    width = high - low
    scale = width if width > 0 else abs(difference)
    if scale == 0 or not math.isfinite(scale):
        decimals = 0
    elif width > 0:
        decimals = min(8, max(0, 1 - math.floor(math.log10(scale))))
    else:  # no spread (identical draws): the difference as it is, to 4 digits
        decimals = min(8, max(0, 3 - math.floor(math.log10(scale))))
        text = f"{difference:+.{decimals}f}".rstrip("0").rstrip(".")
        decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{difference:+.{decimals}f} [{low:+.{decimals}f}, {high:+.{decimals}f}]"


def compare(
    a: RunResult,
    b: RunResult,
    metric: str,
    *,
    summarize: Summarize | None = None,
    minimize: bool = True,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    warn_few: bool = True,
    anytime: bool = False,
    bounds: tuple[float, float] = (0.0, 1.0),
    population: int | None = None,
) -> Comparison:
    """Return how ``b`` differs from ``a`` on ``metric``, with a paired bootstrap interval.

    Items are paired by index; only those both runs completed count (fewer
    than 5, and a ``RuntimeWarning`` says the interval means little, unless
    ``warn_few=False``). ``a`` and ``b`` may be run folders (read, never run).
    Each resample draws that many items with replacement and computes the
    metric of both runs on the same draw: with ``summarize`` (the runner's,
    e.g. corpus WER, which is no mean of per-item WERs) its ``metric`` entry,
    else the mean of each record's ``metrics[metric]``.

    Examples
    --------
    >>> from kit import EnvironmentProvider, Runner
    >>> class Scores(EnvironmentProvider):
    ...     def build_env_local(self): return {"wers": list(self.config.wers)}
    ...     def make_worker_setup_fn(self): return dict
    >>> class Lookup(Runner):
    ...     @staticmethod
    ...     def forward(idx, wers): return {"metrics": {"wer": wers[idx]}}
    >>> a = Lookup(Scores({"wers": [0.2, 0.3, 0.1, 0.4] * 10})).run(40)
    >>> b = Lookup(Scores({"wers": [0.1, 0.2, 0.1, 0.3] * 10})).run(40)
    >>> found = compare(a, b, "wer")
    >>> round(found.difference, 3), found.low < found.difference < found.high < 0
    (-0.075, True)
    >>> found.p_better
    1.0

    With ``anytime=True`` the interval is a confidence sequence
    (:class:`kit._trials.anytime.ConfidenceSequence`): valid at every look while
    items arrive, so a comparison may stop the moment it excludes zero. It
    takes a per-item metric within ``bounds`` (default 0 to 1), paired items
    in the order they ran (which must be a random order of the set, as
    ``stop: decided`` sweeps run them), and with ``population`` (the set's
    size) it narrows to the set's exact difference at its last item.

    >>> found = compare(a, b, "wer", anytime=True, population=40)
    >>> print(found)
    wer: 0.25 -> 0.175, difference -0.075 [-0.075, -0.075] (95% anytime-valid, 40 items); b lower
    >>> found.decided
    True
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    left, right = _paired(_run(a, "a"), _run(b, "b"))
    if not left:
        raise ValueError(
            "the runs have no completed item in common: compare two runs over the same items"
        )
    if len(left) < FEW and warn_few:
        warnings.warn(
            f"only {len(left)} completed item(s) in common: an interval over so few items "
            "says little; compare runs over more items",
            RuntimeWarning,
            stacklevel=2,
        )
    if anytime:
        return _anytime(left, right, metric, summarize, minimize, confidence, bounds, population)
    import numpy as np

    rng = np.random.default_rng(seed)
    if summarize is None:
        x = np.array([_item_metric(r, metric, "a", i) for i, r in enumerate(left)])
        y = np.array([_item_metric(r, metric, "b", i) for i, r in enumerate(right)])
        base_a, base_b = float(x.mean()), float(y.mean())
        # Paired: the difference of two means over one draw is the mean of the items'
        # differences. Drawn a block of resamples at a time, so 200,000 items x 2,000
        # resamples never holds more than BLOCK indices at once.
        paired = y - x
        rows = max(1, BLOCK // len(left))
        differences = np.concatenate(
            [
                paired[
                    rng.integers(0, len(left), size=(min(rows, resamples - done), len(left)))
                ].mean(axis=1)
                for done in range(0, resamples, rows)
            ]
        )
    else:
        draws = rng.integers(0, len(left), size=(resamples, len(left)))
        base_a = _summary_metric(summarize, left, metric)
        base_b = _summary_metric(summarize, right, metric)
        differences = np.array(
            [
                _summary_metric(summarize, [right[i] for i in draw], metric)
                - _summary_metric(summarize, [left[i] for i in draw], metric)
                for draw in draws
            ]
        )
    tail = (1 - confidence) / 2
    low, high = np.quantile(differences, [tail, 1 - tail])
    better = differences < 0 if minimize else differences > 0
    return Comparison(
        metric=metric,
        a=base_a,
        b=base_b,
        difference=base_b - base_a,
        low=float(low),
        high=float(high),
        confidence=confidence,
        p_better=float(better.mean()),
        items=len(left),
        resamples=resamples,
        minimize=minimize,
    )


def _anytime(
    left: list[Any],
    right: list[Any],
    metric: str,
    summarize: Summarize | None,
    minimize: bool,
    confidence: float,
    bounds: tuple[float, float],
    population: int | None,
) -> Comparison:
    """Compare over the paired items in the order they ran, with a confidence sequence."""
    from kit._trials.anytime import ConfidenceSequence

    if summarize is not None:
        raise ValueError(
            "anytime=True compares a per-item metric (each record's metrics[metric]); a "
            "corpus metric from summarize has no per-item terms to bet on: record the "
            "metric per item, or compare with the bootstrap (anytime=False)"
        )
    low, high = bounds
    x = [_item_metric(r, metric, "a", i) for i, r in enumerate(left)]
    y = [_item_metric(r, metric, "b", i) for i, r in enumerate(right)]
    for run, values in (("a", x), ("b", y)):
        for position, value in enumerate(values):
            if not low <= value <= high:
                raise ValueError(
                    f"run {run}'s record at paired position {position} has metrics"
                    f"[{metric!r}] = {value}, outside bounds={bounds}: an anytime interval "
                    "needs bounded per-item values; give the bounds they lie within"
                )
    sequence = ConfidenceSequence(
        low - high, high - low, alpha=1 - confidence, population=population
    )
    sequence.update([b - a for a, b in zip(x, y, strict=True)])
    lower, upper = sequence.interval
    mean_a, mean_b = sum(x) / len(x), sum(y) / len(y)
    return Comparison(
        metric=metric,
        a=mean_a,
        b=mean_b,
        difference=mean_b - mean_a,
        low=lower,
        high=upper,
        confidence=confidence,
        p_better=float("nan"),
        items=len(x),
        resamples=0,
        minimize=minimize,
        method="anytime",
    )


def _run(run: Any, name: str) -> RunResult:
    """Return ``run`` as a result: a :class:`~kit.RunResult`, or a run folder's (read, not run)."""
    if isinstance(run, str | os.PathLike):
        from kit.store._results import read_result

        return read_result(Path(run))  # JSON and JSON lines: reading runs no code
    if not (hasattr(run, "indices") and hasattr(run, "records")):
        raise TypeError(
            f"{name} is {type(run).__name__}, not a run: give a kit.RunResult (what run() "
            "returns, or kit.attach(folder).result()) or a run's folder"
        )
    return cast(RunResult, run)


def _paired(a: RunResult, b: RunResult) -> tuple[list[Any], list[Any]]:
    theirs: dict[Index, Any] = {
        index: record
        for index, record in zip(b.indices, b.records, strict=True)
        if record is not None
    }
    left, right = [], []
    for index, record in zip(a.indices, a.records, strict=True):
        if record is not None and index in theirs:
            left.append(record)
            right.append(theirs[index])
    return left, right


def _item_metric(record: Any, metric: str, run: str, position: int) -> float:
    metrics = record.get("metrics") if isinstance(record, dict) else None
    value = metrics.get(metric) if isinstance(metrics, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        raise ValueError(
            f"run {run}'s record at paired position {position} has no number "
            f"metrics[{metric!r}]; give summarize= (the runner's summarize) to compare "
            "a corpus metric, or record the metric per item"
        )
    if not math.isfinite(value):
        raise ValueError(
            f"run {run}'s record at paired position {position} has metrics[{metric!r}] = "
            f"{value}: an interval over an infinite value means nothing; leave such items "
            "out, or record a finite value"
        )
    return float(value)


def _summary_metric(summarize: Summarize, records: Sequence[Any], metric: str) -> float:
    summary = summarize(list(records))
    value = summary.get(metric)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError(
            f"summarize() gave no number {metric!r} (it gave: {', '.join(summary) or 'nothing'})"
        )
    return float(value)


def metric_of(records: Sequence[Any], metric: str, summarize: Summarize | None) -> float | None:
    """Return ``metric`` over ``records``: the runner's summary if it gives it, else the mean.

    The mean is of each record's ``metrics[metric]``; None when neither has it.

    Examples
    --------
    >>> metric_of([{"metrics": {"wer": 0.1}}, {"metrics": {"wer": 0.3}}], "wer", None)
    0.2
    """
    if summarize is not None and records:
        value: Any = summarize(list(records)).get(metric)
        if _number(value):
            return float(value)
    values = [item_metric(record, metric) for record in records]
    numbers = [v for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def item_metric(record: Any, metric: str) -> float | None:
    """Return a record's ``metrics[metric]`` as a float, or None when it has no such number."""
    metrics = record.get("metrics") if isinstance(record, dict) else None
    value: Any = metrics.get(metric) if isinstance(metrics, dict) else None
    return float(value) if _number(value) else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def run_metric(result: Any, metric: str) -> float | None:
    """Return a run's ``metric``: its summary entry, else the mean of its records' metrics.

    None when neither has a number (a sweep's trials are ranked, reported and
    plotted by this one rule).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> run = SimpleNamespace(summary={}, records=[{"metrics": {"wer": 0.1}}, None])
    >>> run_metric(run, "wer"), run_metric(run, "rtf")
    (0.1, None)
    """
    value = result.summary.get(metric)
    if _number(value):
        return float(value)
    return metric_of([r for r in result.records if r is not None], metric, None)
