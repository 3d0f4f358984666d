"""sclite's alignment, compiled and in Python: the same steps, in memory linear in an utterance."""

from __future__ import annotations

import importlib
import os
import random
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.asr.wer import score

align_module = importlib.import_module("kit.asr.align")  # kit.asr.align is also a function

tokens = st.lists(st.sampled_from("abcde"), max_size=14)


def test_the_compiled_kernel_is_built_where_a_compiler_is() -> None:
    # CI installs the package with Debian's gcc: the kernel must be there, not the fallback.
    if align_module._compiled is None:
        if os.environ.get("CI"):
            pytest.fail("kit.asr._align was not built (is gcc installed?)")
        pytest.skip("kit.asr._align not built here: the Python programme runs instead")


@settings(max_examples=400, deadline=None)
@given(ref=tokens, hyp=tokens, block=st.integers(1, 40))
def test_compiled_and_python_give_the_same_steps_whole_or_in_blocks(
    ref: list[str], hyp: list[str], block: int
) -> None:
    left, right = align_module._token_ids(ref, hyp)
    whole = align_module.python_ops(left, right)
    # Blocks of rows recompute the same moves: the same steps, whatever the block.
    assert align_module.python_ops(left, right, block) == whole
    if align_module._compiled is not None:
        assert align_module._compiled.ops(left, right, block) == whole
        assert align_module._compiled.ops(left, right, 1 << 24) == whole


def test_steps_pair_with_their_tokens_as_sclite_prints_them() -> None:
    alignment = align_module.align(["a", "b", "c", "d"], ["x", "b", "d", "e"])
    assert alignment.steps == (
        ("S", "a", "x"),
        ("C", "b", "b"),
        ("D", "c", None),
        ("C", "d", "d"),
        ("I", None, "e"),
    )


def test_a_four_thousand_word_utterance_is_scored_in_megabytes() -> None:
    if align_module._compiled is None:
        pytest.skip("the Python programme takes minutes on 10,000 characters a side")
    rng = random.Random(4)
    words = [rng.choice(["the", "cat", "sat", "on", "a", "mat", "dog"]) for _ in range(4000)]
    heard = [w if rng.random() < 0.8 else rng.choice(["the", "bat", "sit"]) for w in words]
    tracemalloc.start()
    try:
        found = score(" ".join(words), " ".join(heard), "none")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found["words"] == 4000 and found["chars"] > 10_000
    # Before: every cell's cost a Python int, 3.1 GB for 2,000 words. Now: a byte a
    # cell for at most align.BLOCK_CELLS cells, and cost rows.
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB"
