"""Cutting a chunk's items into batches of similar size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kit._chunk import SIZE_SPREAD, size_batches

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
