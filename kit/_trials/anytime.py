"""Intervals valid at every look: a confidence sequence for a bounded mean, by betting.

A paired bootstrap interval (:func:`kit.compare`) is valid once, at the end.
Looked at while items arrive, and acted on as soon as it excludes zero, it
decides wrongly far more often than its level says (Optuna's Wilcoxon
pruner, looked at every 10 items, pruned a tied trial in about 30% of runs
against a nominal 10%). A confidence sequence holds at every look at once:
the chance that it ever misses the mean, over the whole run, is at most
``alpha``. So a comparison may be stopped the moment its sequence excludes
zero.

This is the hedged-capital betting sequence of Waudby-Smith and Ramdas
(2024, "Estimating means of bounded random variables by betting", JRSS-B),
in its without-replacement form when the set's size is known (a test set
is a finite population drawn in a random order): for each candidate mean
``m`` on a grid, two gamblers bet that the observations run above and
below ``m``; ``m`` leaves the sequence once either's capital reaches
``2 / alpha``. Bets are the predictable plug-in ones (each from the
observations before it), truncated at three quarters of what keeps the
capital positive (the paper's other choice, one half, decided a 0.05
difference at a median of 144 items of 500, looked at after each item,
where this decides at 105; both are valid). With a known population the sequence shrinks to the
exact mean at the last item. ``tests/trials/test_anytime.py`` holds it to an independent
scalar implementation of the same definition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: Candidate means between the bounds: the interval's resolution is (high - low) / GRID.
GRID = 1000
#: Each bet is at most this share of what keeps the gambler's capital positive.
TRUNCATION = 0.75


class ConfidenceSequence:
    """A time-uniform interval on the mean of observations bounded in ``[low, high]``.

    Feed observations in the order they were drawn (:meth:`update`); read
    :attr:`interval` at any time, as often as you like: with probability at
    least ``1 - alpha`` every interval it ever gives holds the mean.

    Parameters
    ----------
    low, high
        Bounds every observation lies within (an observation outside is an error).
    alpha
        The chance, over the whole sequence, that some interval misses the mean.
    population
        The number of items when they are drawn without replacement from a
        finite set (a test set in a random order): the mean is the set's, and
        the interval is exact once every item is seen. None: independent draws.
    batch
        Keep this many independent sequences side by side (simulations);
        :meth:`update` then takes one row of observations per sequence.

    Examples
    --------
    >>> import random
    >>> rng = random.Random(0)
    >>> values = [min(1.0, max(-1.0, rng.gauss(0.2, 0.3))) for _ in range(300)]
    >>> cs = ConfidenceSequence(-1.0, 1.0, population=300)
    >>> cs.update(values[:100])
    >>> low, high = cs.interval
    >>> 0.0 < low < sum(values) / 300 < high
    True
    >>> cs.update(values[100:])
    >>> [round(bound, 6) for bound in cs.interval] == [round(sum(values) / 300, 6)] * 2
    True
    """

    def __init__(
        self,
        low: float,
        high: float,
        *,
        alpha: float = 0.05,
        population: int | None = None,
        batch: int | None = None,
        grid: int = GRID,
    ) -> None:
        import numpy as np

        if not high > low:
            raise ValueError(f"the bounds must have high > low, got [{low}, {high}]")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        if population is not None and population < 1:
            raise ValueError(f"population must be 1 or more, got {population}")
        self.low, self.high, self.alpha = float(low), float(high), float(alpha)
        self.population, self.batch = population, batch
        self.count = 0
        rows = 1 if batch is None else batch
        self._m = np.linspace(0.0, 1.0, grid + 1)
        # Each gambler's log capital (up, down), per sequence and candidate.
        self._log = np.zeros((2, rows, grid + 1))
        self._sides = np.array([1.0, -1.0]).reshape(2, 1, 1, 1)  # up bets +, down bets -
        self._out = np.zeros((rows, grid + 1), dtype=bool)  # candidates ruled out for good
        self._sum = np.zeros(rows)  # of the scaled observations
        # The bets' regularised sum of squared deviations (one fake observation's 1/4).
        self._var_sum = np.full(rows, 0.25)
        self._bounds = np.stack([np.zeros(rows), np.ones(rows)])  # running intersection

    def update(self, values: Sequence[float] | Any) -> None:
        """Take the next observations, in the order they were drawn.

        With ``batch``, ``values`` has one row per sequence (all rows the same length).
        """
        import numpy as np

        z = np.asarray(values, dtype=float)
        z = z.reshape(1, -1) if self.batch is None else z.reshape(self.batch, -1)
        if z.size == 0:
            return
        if not (self.low <= z.min() and z.max() <= self.high):  # NaN fails both
            raise ValueError(
                f"an observation lies outside the bounds [{self.low}, {self.high}] (or is "
                "not a number); the sequence is valid only for bounded observations"
            )
        k = z.shape[1]
        if self.population is not None and self.count + k > self.population:
            raise ValueError(
                f"{self.count + k} observations of a population of {self.population}: "
                "each item is drawn once"
            )
        z = (z - self.low) / (self.high - self.low)
        threshold = math.log(2 / self.alpha)  # hedged: either gambler, at alpha / 2
        # The bets, each from the observations before it (predictable): the plug-in
        # sqrt(2 log(2 / alpha) / (var t log(1 + t))), var and mean regularised by one
        # fake observation (mean 1/2, variance 1/4).
        t = self.count + np.arange(1, k + 1)  # each observation's number
        sums = self._sum[:, None] + np.cumsum(z, axis=1)  # after each observation
        before = sums - z  # the sum of the scaled observations before each
        means = (0.5 + sums) / (t + 1)
        var_sums = self._var_sum[:, None] + np.cumsum((z - means) ** 2, axis=1)
        var_before = np.concatenate([self._var_sum[:, None], var_sums[:, :-1]], axis=1)
        var = var_before / t  # of the t - 1 observations before, and the fake one
        bets = np.sqrt(2 * threshold / (var * t * np.log1p(t)))
        total, var_sum = sums[:, -1], var_sums[:, -1]
        # Only candidates some sequence still keeps are worked on: a candidate out stays
        # out, and the band kept narrows as observations come.
        live = np.flatnonzero(~self._out.all(axis=0))
        m = self._m[live]
        # The mean of what is left to draw, if the whole population's mean is m.
        if self.population is None:
            remaining = np.broadcast_to(m, (z.shape[0], k, m.size))
        else:
            drawn = self.count + np.arange(k)  # items before each observation
            left = (self.population - drawn)[None, :, None]
            remaining = (self.population * m[None, None, :] - before[:, :, None]) / left
        impossible = ((remaining < 0) | (remaining > 1)).any(axis=1)
        clipped = np.clip(remaining, 1e-12, 1 - 1e-12)
        # The two gamblers side by side (axis 0): one bets the mean is above m, with at
        # most TRUNCATION / m, the other below it, with at most TRUNCATION / (1 - m).
        bet = np.minimum(bets[None, :, :, None], TRUNCATION / np.stack([clipped, 1 - clipped]))
        # Impossible candidates too, with the clipped mean: their factors stay positive.
        bet *= (z[:, :, None] - clipped) * self._sides
        bet += 1
        # Each gambler's capital after each observation of the chunk, as running products
        # against what is left to reach 2 / alpha: one logarithm a chunk, not one an
        # item, and a candidate out after any observation, not only at the chunk's end
        # (so the sequence does not depend on how observations are chunked). Every factor
        # is at least 1 - TRUNCATION > 0; what is left to reach is capped below where exp
        # overflows.
        capital = np.cumprod(bet, axis=2)
        reach = np.exp(np.minimum(threshold - self._log[:, :, live], 700.0))
        self._out[:, live] |= impossible | (capital >= reach[:, :, None, :]).any(axis=(0, 2))
        self._log[:, :, live] += np.log(capital[:, :, -1])
        self._sum, self._var_sum = total, var_sum
        self.count += k
        self._tighten()

    def _tighten(self) -> None:
        import numpy as np

        step = 1 / (self._m.size - 1)
        kept = ~self._out
        any_kept = kept.any(axis=1)
        # The grid's neighbours bound what lies between its points; a sequence with no
        # candidate left (the exact mean between two points, at the end) keeps [0, 1].
        low = np.where(any_kept, self._m[kept.argmax(axis=1)] - step, 0.0)
        high = np.where(
            any_kept, self._m[self._m.size - 1 - kept[:, ::-1].argmax(axis=1)] + step, 1.0
        )
        bounds = self._bounds
        np.maximum(bounds[0], low, out=low)
        np.minimum(bounds[1], high, out=high)
        if self.population is not None:
            # What the items seen already force, whatever the rest are.
            np.maximum(low, self._sum / self.population, out=low)
            np.minimum(high, 1 - (self.count - self._sum) / self.population, out=high)
        # Rounding can cross the bounds at the last item: they are the same number then.
        crossed = low > high
        if crossed.any():
            low[crossed] = high[crossed] = (low[crossed] + high[crossed]) / 2
        bounds[0], bounds[1] = low, high

    @property
    def intervals(self) -> Any:
        """Every sequence's interval now: an array of ``(low, high)`` rows, in the bounds' units."""
        scale = self.high - self.low
        return (self._bounds.T * scale) + self.low

    @property
    def interval(self) -> tuple[float, float]:
        """The interval now (of the first sequence, with ``batch``), in the bounds' units."""
        low, high = self.intervals[0]
        return float(low), float(high)
