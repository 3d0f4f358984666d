"""Chunk planning: every position exactly once, sizes that follow measured speed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kit._plan import ChunkPlanner


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


def test_auto_starts_with_a_probe_then_aims_at_half_a_second() -> None:
    planner = ChunkPlanner([(0, 100_000)], n_workers=2)
    assert planner.next() == (0, 1)
    planner.observe(1, 0.01)  # 10 ms per item -> 50 items per 0.5 s
    start, stop = planner.next()  # type: ignore[misc]
    assert stop - start == 50


def test_auto_shrinks_chunks_towards_the_end() -> None:
    planner = ChunkPlanner([(0, 200)], n_workers=2)
    sizes = [b - a for a, b in drain(planner, per_item=0.01)]
    assert sizes[1] >= sizes[-1]
    assert max(sizes) <= 50
    assert sizes[-1] <= 5


def test_trivial_items_get_big_chunks() -> None:
    planner = ChunkPlanner([(0, 20_000)], n_workers=2)
    spans = drain(planner, per_item=1e-6)
    assert len(spans) < 10


def test_batch_size_rounds_chunks_to_whole_batches() -> None:
    planner = ChunkPlanner([(0, 1000)], n_workers=2, batch_size=4)
    sizes = [b - a for a, b in drain(planner, per_item=0.001)]
    assert all(size % 4 == 0 for size in sizes[:-1])
