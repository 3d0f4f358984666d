"""Intervals valid at every look: held to a scalar reference and to their promises, simulated."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from kit._trials.anytime import TRUNCATION, ConfidenceSequence


def reference_interval(
    values: list[float], low: float, high: float, alpha: float, population: int | None, grid: int
) -> tuple[float, float]:
    """The same definition, written out one candidate and one observation at a time.

    Waudby-Smith and Ramdas's hedged capital: for each candidate mean m, the
    products of (1 + bet (x - m_t)) and (1 - bet (x - m_t)), m_t the mean of
    what is left to draw if the population's mean is m; m is out once either
    product reaches 2 / alpha (or m_t leaves [0, 1]). The interval: the
    candidates kept, a grid step wider, within what the draws force, and
    within every earlier interval.
    """
    xs = [(v - low) / (high - low) for v in values]
    threshold = 2 / alpha
    # The bets: predictable plug-in, from the draws before each.
    bets, total, squares = [], 0.0, 0.25
    for t, x in enumerate(xs, start=1):
        bets.append(math.sqrt(2 * math.log(2 / alpha) / (squares / t * t * math.log(1 + t))))
        total += x
        mean = (0.5 + total) / (t + 1)
        squares += (x - mean) ** 2
    running = (0.0, 1.0)
    kept = [True] * (grid + 1)
    capital = [[1.0, 1.0] for _ in range(grid + 1)]
    seen = 0.0
    for t, x in enumerate(xs, start=1):
        for g in range(grid + 1):
            m = g / grid
            left = m if population is None else (population * m - seen) / (population - t + 1)
            if left < 0 or left > 1:
                kept[g] = False
                continue
            inside = min(max(left, 1e-12), 1 - 1e-12)
            up = min(bets[t - 1], TRUNCATION / inside)
            down = min(bets[t - 1], TRUNCATION / (1 - inside))
            capital[g][0] *= 1 + up * (x - left)
            capital[g][1] *= 1 - down * (x - left)
            if capital[g][0] >= threshold or capital[g][1] >= threshold:
                kept[g] = False
        seen += x
        candidates = [g / grid for g in range(grid + 1) if kept[g]]
        lo = max(0.0, candidates[0] - 1 / grid) if candidates else 0.0
        hi = min(1.0, candidates[-1] + 1 / grid) if candidates else 1.0
        if population is not None:
            lo, hi = max(lo, seen / population), min(hi, 1 - (t - seen) / population)
        lo, hi = max(running[0], lo), min(running[1], hi)
        if lo > hi:
            lo = hi = (lo + hi) / 2
        running = (lo, hi)
    return low + running[0] * (high - low), low + running[1] * (high - low)


def test_intervals_equal_a_scalar_reference_on_a_hundred_fixed_sequences() -> None:
    rng = random.Random(58)
    for case in range(100):
        n = rng.randint(1, 40)
        population = None if case % 3 == 0 else n + rng.randint(0, 20)
        shift, spread = rng.uniform(-0.5, 0.5), rng.uniform(0.05, 0.6)
        values = [min(1.0, max(-1.0, rng.gauss(shift, spread))) for _ in range(n)]
        alpha = rng.choice([0.05, 0.1, 0.0125])
        cs = ConfidenceSequence(-1.0, 1.0, alpha=alpha, population=population, grid=100)
        cut = rng.randint(0, n)  # chunked anyhow: the interval is the same
        cs.update(values[:cut])
        cs.update(values[cut:])
        expected = reference_interval(values, -1.0, 1.0, alpha, population, grid=100)
        assert cs.interval == pytest.approx(expected, abs=1e-6), (case, values)


def test_the_interval_is_exact_once_every_item_of_the_population_is_seen() -> None:
    values = np.random.default_rng(1).uniform(0, 1, 37)
    cs = ConfidenceSequence(0.0, 1.0, population=37)
    for value in values:
        cs.update([value])
    assert cs.interval == pytest.approx((values.mean(), values.mean()), abs=1e-12)


def paired_null(rng: np.random.Generator, sweeps: int, trials: int, items: int) -> np.ndarray:
    """Per-item differences of each trial against the baseline, tied on the whole set.

    Each trial's per-item scores are the baseline's, shuffled: the same set of
    numbers, so its mean equals the baseline's exactly, item by item otherwise
    unrelated, as two equally good systems erring on different utterances.
    """
    baseline = rng.beta(2, 8, size=(sweeps, 1, items))
    shuffled = rng.permuted(np.repeat(baseline, trials - 1, axis=1), axis=2)
    return shuffled - baseline


def test_a_thousand_null_sweeps_looked_at_after_every_chunk_decide_wrongly_rarely() -> None:
    # 5 trials against the first: 4 sequences a sweep at alpha / 4 (Bonferroni), each
    # looked at after every chunk of 10 items. Any decision in a null sweep is false.
    rng = np.random.default_rng(5)
    sweeps, trials, items, chunk = 1000, 5, 100, 10
    differences = paired_null(rng, sweeps, trials, items).reshape(-1, items)
    cs = ConfidenceSequence(
        -1.0, 1.0, alpha=0.05 / (trials - 1), population=items, batch=len(differences)
    )
    decided = np.zeros(len(differences), dtype=bool)
    for start in range(0, items, chunk):
        cs.update(differences[:, start : start + chunk])
        low, high = cs.intervals.T
        decided |= (low > 1e-9) | (high < -1e-9)
    family_wise = decided.reshape(sweeps, trials - 1).any(axis=1).mean()
    assert family_wise <= 0.05


def test_a_difference_of_five_points_is_decided_within_a_third_of_five_hundred_items() -> None:
    # Per-item differences of mean 0.05 and sd 0.15 (the research note's case).
    rng = np.random.default_rng(7)
    runs, items, chunk = 200, 500, 10
    differences = np.clip(rng.normal(0.05, 0.15, size=(runs, items)), -1, 1)
    cs = ConfidenceSequence(-1.0, 1.0, population=items, batch=runs)
    stopped, missed = np.full(runs, items), np.zeros(runs, dtype=bool)
    for start in range(0, items, chunk):
        cs.update(differences[:, start : start + chunk])
        low, high = cs.intervals.T
        truth = differences.mean(axis=1)
        missed |= (low > truth + 1e-9) | (high < truth - 1e-9)
        stopped = np.where((low > 0) & (stopped == items), start + chunk, stopped)
    assert missed.mean() <= 0.05  # the set's own difference, missed at some look
    assert np.median(stopped) <= 150
    assert np.percentile(stopped, 90) <= 200


def test_observations_outside_the_bounds_or_past_the_population_are_refused() -> None:
    cs = ConfidenceSequence(0.0, 1.0, population=2)
    with pytest.raises(ValueError, match=r"outside the bounds \[0.0, 1.0\]"):
        cs.update([1.5])
    cs.update([0.5, 0.5])
    with pytest.raises(ValueError, match="3 observations of a population of 2"):
        cs.update([0.5])
    with pytest.raises(ValueError, match="high > low"):
        ConfidenceSequence(1.0, 1.0)
