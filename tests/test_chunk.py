"""A chunk's items: cut into batches of similar size, and handed back past a budget."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from kit._chunk import SIZE_SPREAD, BatchBy, execute_chunk, size_batches
from kit._inject import ForwardSpec

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


def test_a_chunk_past_its_budget_hands_back_the_items_it_has_not_started() -> None:
    calls: list[int] = []

    def forward(idx: int) -> int:
        calls.append(idx)
        time.sleep(0.05 if idx == 12 else 0.0)
        return idx

    chunk = execute_chunk(forward, {}, [10, 11, 12, 13, 14], 3, None, "0", budget=0.04)
    assert calls == [10, 11, 12]  # the slow item went over; the two behind it never ran
    assert (chunk.start, chunk.stop, chunk.records) == (3, 6, [10, 11, 12])


def test_a_budget_cuts_fixed_batches_whole_and_never_batches_made_by_size() -> None:
    def forward(items: list[int]) -> list[int]:
        time.sleep(0.02)
        return items

    fixed = execute_chunk(forward, {}, list(range(6)), 0, 2, "0", budget=0.0)
    assert fixed.records == [0, 1]
    by_size = BatchBy(size=_size, spec=ForwardSpec.of(_size, "size"), budget=2.0)
    sized = execute_chunk(forward, {}, [1, 1, 1, 1], 0, None, "0", by_size, {}, budget=0.0)
    assert sized.records == [1, 1, 1, 1]  # out of order: no prefix to hand back


def _size(idx: int) -> float:
    return float(idx)
