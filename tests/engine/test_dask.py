"""The Dask dispatcher's own accounting, apart from a cluster."""

from __future__ import annotations

from kit._engine.dask import BusyClock


def test_waiting_for_arrivals_or_the_scheduler_is_not_counted_as_the_drivers_work() -> None:
    # Counted, a gather's round trip made the cost per chunk the time between
    # arrivals, and the planner's floor on the last chunks grew with the chunks.
    times = iter([0.0, 1.0, 4.0, 5.0, 6.0, 6.5, 8.0])
    clock = BusyClock(now=lambda: next(times))
    with clock.waiting():  # 1.0 -> 4.0
        pass
    assert clock.per_chunk(2) == 1.0  # 5 s, less 3 s of waiting, over 2 chunks
    with clock.waiting():  # 6.0 -> 6.5
        pass
    assert clock.per_chunk(1) == 2.5  # only from the last charge on


def test_a_wait_that_raises_is_still_not_work() -> None:
    times = iter([0.0, 1.0, 3.0, 3.0])
    clock = BusyClock(now=lambda: next(times))
    try:
        with clock.waiting():
            raise TimeoutError
    except TimeoutError:
        pass
    assert clock.per_chunk(1) == 1.0
