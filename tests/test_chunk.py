"""A chunk's items: cut into batches of similar size, and handed back past a budget."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kit._engine.chunk
from kit._engine.chunk import SIZE_SPREAD, BatchBy, execute_chunk, size_batches
from kit._engine.inject import ForwardSpec

SIZES = st.lists(st.floats(min_value=0.1, max_value=30.0), max_size=60)


@given(SIZES, st.floats(min_value=0.5, max_value=100.0), st.none() | st.integers(1, 8))
def test_each_item_lands_in_one_batch_of_similar_sizes_under_the_budget(
    sizes: list[float], budget: float, max_items: int | None
) -> None:
    batches = size_batches(sizes, budget, max_items)
    assert sorted(j for batch in batches for j in batch) == list(range(len(sizes)))
    for batch in batches:
        picked = [sizes[j] for j in batch]
        assert len(batch) == 1 or sum(picked) <= budget
        assert max(picked) <= SIZE_SPREAD * min(picked)
        assert max_items is None or len(batch) <= max_items


class FakeClock:
    """``time`` for kit._engine.chunk: ``forward`` moves it on by each item's duration."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_an_item_over_its_budget_ends_its_chunk_which_hands_back_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(kit._engine.chunk, "time", clock)
    calls: list[int] = []

    def forward(idx: int) -> int:
        calls.append(idx)
        clock.now += 5.0 if idx == 12 else 0.1
        return idx

    chunk = execute_chunk(forward, {}, [10, 11, 12, 13, 14], 3, None, "0", budget=1.0)
    assert calls == [10, 11, 12]  # the slow item went over; the two behind it never ran
    assert (chunk.start, chunk.stop, chunk.records) == (3, 6, [10, 11, 12])


def test_items_each_a_little_slower_than_expected_do_not_cut_their_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A corpus sorted by length: every item is slower than the last, none is an outlier.
    clock = FakeClock()
    monkeypatch.setattr(kit._engine.chunk, "time", clock)

    def forward(idx: int) -> int:
        clock.now += 0.2 * idx
        return idx

    chunk = execute_chunk(forward, {}, [1, 2, 3, 4], 0, None, "0", budget=1.0)
    assert chunk.records == [1, 2, 3, 4]  # 2 s in all, no item over 1 s


def test_a_budget_cuts_fixed_batches_whole_and_never_batches_made_by_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(kit._engine.chunk, "time", clock)

    def forward(items: list[int]) -> list[int]:
        clock.now += 5.0
        return items

    fixed = execute_chunk(forward, {}, list(range(6)), 0, 2, "0", budget=1.0)
    assert fixed.records == [0, 1]
    by_size = BatchBy(size=_size, spec=ForwardSpec.of(_size, "size"), budget=2.0)
    sized = execute_chunk(forward, {}, [1, 1, 1, 1], 0, None, "0", by_size, {}, budget=1.0)
    assert sized.records == [1, 1, 1, 1]  # out of order: no prefix to hand back


def _size(idx: int) -> float:
    return float(idx)
