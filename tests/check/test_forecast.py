"""The forecast: per-item times scaled by a feature, the engine's chunks, an 80% interval."""

from __future__ import annotations

import random

import pytest

from kit.check import forecast
from kit.check._check import spread
from kit.check._forecast import RUN_SPREAD, fit


def test_times_in_proportion_to_a_feature_forecast_the_set_from_its_features() -> None:
    rng = random.Random(0)
    every = [rng.uniform(1, 20) for _ in range(2000)]  # seconds of audio, say
    sample = spread(range(2000), 20, seed=3)
    features = [every[i] for i in sample]
    times = [0.05 + 0.3 * f for f in features]  # exact: no noise
    made = forecast(
        times,
        items=2000,
        slots=4,
        setup_seconds=0.0,
        chunk_seconds=0.0,
        chunk_size=1,
        features=features,
        all_features=every,
        feature="duration",
    )
    work = sum(0.05 + 0.3 * f for f in every)
    # The work over the slots, and half an item's time for the last one out.
    assert made.seconds[1] == pytest.approx(work / 4 + work / 2000 / 2, rel=1e-3)
    assert made.feature == "duration"
    # No sampling doubt left, only the machine's own drift either way.
    assert made.seconds[0] == pytest.approx(made.seconds[1] * (1 - RUN_SPREAD), rel=1e-3)
    assert made.seconds[2] == pytest.approx(made.seconds[1] * (1 + RUN_SPREAD), rel=1e-3)


def test_noisy_times_give_a_wider_interval_that_holds_the_truth() -> None:
    rng = random.Random(1)
    truth = [rng.lognormvariate(0, 0.8) for _ in range(5000)]
    sample = [truth[i] for i in spread(range(5000), 40, seed=2)]
    made = forecast(sample, items=5000, slots=8, setup_seconds=2.0, chunk_seconds=0.0)
    low, median, high = made.seconds
    actual = 2.0 + sum(truth) / 8
    assert low < actual < high
    assert (high - low) / median > 2 * RUN_SPREAD  # the sample's doubt adds to the drift's
    assert made.slot_hours == pytest.approx(median * 8 / 3600, rel=1e-3)


def test_the_chunks_cost_is_spread_over_the_slots() -> None:
    same = {"items": 1000, "slots": 2, "setup_seconds": 0, "chunk_size": 10}
    bare = forecast([0.1] * 10, chunk_seconds=0, **same)  # type: ignore[arg-type]
    paid = forecast([0.1] * 10, chunk_seconds=1.0, **same)  # type: ignore[arg-type]
    assert paid.chunks == 100
    assert paid.seconds[1] - bare.seconds[1] == pytest.approx(100 * 1.0 / 2, abs=0.2)


def test_a_fit_never_gives_time_back_for_a_larger_feature() -> None:
    assert fit([3.0, 2.0, 1.0], [1.0, 2.0, 3.0]) == (2.0, 0.0)  # falls back to the mean
    a, b = fit([1.0, 5.0], [10.0, 30.0])  # a line through them would start below zero
    assert (a, b) == (0.0, 6.0 / 40.0)


def test_a_forecast_needs_a_time() -> None:
    with pytest.raises(ValueError, match="at least one item"):
        forecast([], items=10, slots=1, setup_seconds=0, chunk_seconds=0)


def test_a_shared_cluster_is_said_with_the_share_the_run_gets() -> None:
    made = forecast([1.0] * 4, items=100, slots=2, setup_seconds=0, chunk_seconds=0, others=1)
    assert str(made).startswith("100 items on 2 slots (its share beside 1 other run): ")
    assert made.to_dict()["others"] == 1
