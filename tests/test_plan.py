"""Chunk planning: every position exactly once, sizes that follow measured speed."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from kit._engine.plan import ChunkPlanner


def drain(planner: ChunkPlanner, per_item: float | None = None) -> list[tuple[int, int]]:
    out = []
    while (span := planner.next()) is not None:
        out.append(span)
        if per_item is not None:
            planner.observe(span[1] - span[0], per_item * (span[1] - span[0]))
    return out


@given(
    total=st.integers(0, 5000),
    workers=st.integers(1, 16),
    chunk=st.one_of(st.just("auto"), st.integers(1, 500)),
    batch=st.one_of(st.none(), st.integers(1, 8)),
    per_item=st.floats(1e-7, 1.0),
)
def test_every_position_is_planned_exactly_once(
    total: int, workers: int, chunk: int | str, batch: int | None, per_item: float
) -> None:
    spans = drain(ChunkPlanner([(0, total)], workers, chunk, batch), per_item)
    covered = [p for start, stop in spans for p in range(start, stop)]
    assert covered == list(range(total))


def test_pending_gaps_are_respected() -> None:
    spans = drain(ChunkPlanner([(0, 3), (10, 12)], 1, 2))
    assert spans == [(0, 2), (2, 3), (10, 12)]


def test_auto_starts_with_a_probe_then_grows_towards_half_a_second() -> None:
    planner = ChunkPlanner([(0, 100_000)], n_workers=2)
    assert planner.next() == (0, 1)
    planner.observe(1, 0.01)  # 10 ms per item: 50 items would take 0.5 s
    sizes = []
    for _ in range(5):
        start, stop = planner.next()  # type: ignore[misc]
        planner.observe(stop - start, 0.01 * (stop - start))
        sizes.append(stop - start)
    # 4x the probe would be 4 items (40 ms); the floor of min_seconds (50 ms) wins.
    assert sizes == [5, 20, 50, 50, 50]


def test_before_any_chunk_is_back_each_worker_gets_a_probe_then_a_few_items_behind_it() -> None:
    # One-item chunks all round would leave each worker a queue of two items while
    # the driver waits for the first probes; the chunk behind a probe holds what
    # that probe would allow back (growth items), at most a growth-th of the fair share.
    planner = ChunkPlanner([(0, 20_000)], n_workers=256)
    sizes = [b - a for a, b in (planner.next() for _ in range(512))]  # type: ignore[misc]
    assert sizes == [1] * 256 + [4] * 256
    few = ChunkPlanner([(0, 20)], n_workers=2)
    assert [b - a for a, b in (few.next() for _ in range(4))] == [1, 1, 1, 1]  # type: ignore[misc]


def test_positions_handed_back_are_planned_again_first() -> None:
    planner = ChunkPlanner([(0, 100)], n_workers=1, chunk_size=10)
    planner.next()
    planner.next()
    planner.put_back(4, 10)
    assert planner.next() == (4, 10)
    assert planner.next() == (20, 30)
    assert planner.remaining == 70


def test_cheap_items_skip_the_slow_climb_after_the_probe() -> None:
    # At 0.1 ms per item, climbing 1, 4, 16... costs a round trip per step for
    # chunks far below the per-chunk overhead: the next chunk holds 50 ms at once,
    # bounded by a growth-th of the fair share (a rising-cost corpus stays safe).
    planner = ChunkPlanner([(0, 100_000)], n_workers=2)
    assert planner.next() == (0, 1)
    planner.observe(1, 1e-4)
    start, stop = planner.next()  # type: ignore[misc]
    assert stop - start == 500
    small = ChunkPlanner([(0, 1_000)], n_workers=2)
    small.next()
    small.observe(1, 1e-4)
    start, stop = small.next()  # type: ignore[misc]
    assert stop - start == 63  # ceil(999 / 4 / 4)


def test_rising_durations_do_not_make_a_giant_last_chunk() -> None:
    # Sorted by duration, as speech corpora often are: the first items are the cheapest.
    rng = random.Random(7)
    durations = sorted(rng.lognormvariate(-5.5, 1.2) for _ in range(400))
    planner = ChunkPlanner([(0, 400)], n_workers=2)
    spans = drain_with(planner, durations)
    work = [sum(durations[a:b]) for a, b in spans]
    assert max(work) < 0.2 * sum(durations)  # no chunk holds a big share of the run


def drain_with(planner: ChunkPlanner, durations: list[float]) -> list[tuple[int, int]]:
    out = []
    while (span := planner.next()) is not None:
        out.append(span)
        planner.observe(span[1] - span[0], sum(durations[span[0] : span[1]]))
    return out


def test_auto_shrinks_chunks_towards_the_end() -> None:
    planner = ChunkPlanner([(0, 200)], n_workers=2)
    sizes = [b - a for a, b in drain(planner, per_item=0.01)]
    assert sizes[1] >= sizes[-1]
    assert max(sizes) <= 50
    assert sizes[-1] <= 5


def _last_chunks(driver_seconds: float, task_seconds: float = 0.0) -> list[int]:
    planner = ChunkPlanner([(0, 3000)], n_workers=256)
    planner.observe(40, 3.2)  # 80 ms an item
    planner.driver_seconds = driver_seconds
    planner.task_seconds = task_seconds
    sizes = []
    while (span := planner.next()) is not None:
        sizes.append(span[1] - span[0])
    return sizes[-10:-1]  # the very last one is what was left


def test_the_last_chunks_are_no_smaller_than_what_keeps_the_driver_busy() -> None:
    # 256 workers x 4 ms a chunk: smaller chunks would come back faster than it takes them.
    assert min(_last_chunks(driver_seconds=0.004)) == 13  # ceil(1.024 s / 80 ms)
    assert max(_last_chunks(driver_seconds=0.0)) == 1


def test_the_last_chunks_are_no_smaller_than_what_the_cluster_starts_at_ease() -> None:
    # 256 slots x 1 ms of the scheduler's time a task, at 3/4 of the rate it can start.
    assert min(_last_chunks(driver_seconds=0.0, task_seconds=0.001)) == 5  # ceil(0.341 s / 80 ms)


def test_the_cluster_s_least_is_reached_at_once_after_the_probe_not_by_growth() -> None:
    # 4x the probe would be 4 items a chunk: a thousand slots of such chunks would ask
    # the scheduler for more tasks a second than it starts.
    planner = ChunkPlanner([(0, 80_000)], n_workers=1024)
    planner.next()
    planner.observe(1, 0.08)
    start, stop = planner.next()  # type: ignore[misc]
    assert stop - start == 18  # ceil(1.365 s / 80 ms)


def test_trivial_items_get_big_chunks() -> None:
    planner = ChunkPlanner([(0, 20_000)], n_workers=2)
    spans = drain(planner, per_item=1e-6)
    assert len(spans) < 15
    assert max(b - a for a, b in spans) >= 4000


def test_batch_size_rounds_chunks_to_whole_batches() -> None:
    planner = ChunkPlanner([(0, 1000)], n_workers=2, batch_size=4)
    sizes = [b - a for a, b in drain(planner, per_item=0.001)]
    assert all(size % 4 == 0 for size in sizes[:-1])


def test_a_chunk_may_run_twice_its_expected_time_unless_its_size_was_fixed() -> None:
    planner = ChunkPlanner([(0, 1000)], n_workers=2)
    assert planner.budget(10) is None  # the speed is not known yet
    planner.observe(10, 0.1)  # 10 ms an item
    assert planner.budget(20) == 0.4
    assert planner.budget(2) == planner.min_seconds
    assert planner.budget(1) is None  # nothing behind the one item to hand back
    fixed = ChunkPlanner([(0, 1000)], n_workers=2, chunk_size=20)
    fixed.observe(10, 0.1)
    assert fixed.budget(20) is None
