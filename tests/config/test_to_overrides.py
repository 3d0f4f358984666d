"""to_overrides is the exact inverse of applying overrides: a property test."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from kit import ConfigError, load_config
from kit.config import to_overrides
from kit.config._overrides import same

keys = st.sampled_from(["a", "b", "c", "d_1", "e-2", "_f"])


def omegaconf_takes(text: str) -> bool:
    """Whether OmegaConf can hold ``text`` at all (``${`` unclosed is a grammar error)."""
    try:
        OmegaConf.create({"a": text})
    except Exception:
        return False
    return True


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12).filter(omegaconf_takes),
    st.sampled_from(
        ["${a}", "${b.c}", "x ${a} y", "???", "1", "true", "TRUE", "null", "a,b", "[1]", "NaN"]
    ),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_\-./]{0,6}", fullmatch=True),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(keys, inner, max_size=3),
    ),
    max_leaves=8,
)
configs = st.dictionaries(keys, values, max_size=5)


def assert_same(actual: Any, expected: Any) -> None:
    left = OmegaConf.to_container(actual, resolve=False)
    right = OmegaConf.to_container(expected, resolve=False)
    assert same(left, right), (left, right)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=configs, edited=configs)
# Deleting a key that holds an interpolation must not resolve it (a loop, a missing key).
@example(base={"a": "${a}"}, edited={})
@example(base={"a": "${0}"}, edited={})
def test_applying_the_diff_gives_the_edited_config(base: dict, edited: dict) -> None:
    base_cfg, edited_cfg = OmegaConf.create(base), OmegaConf.create(edited)
    overrides = to_overrides(base_cfg, edited_cfg)
    assert_same(load_config(base_cfg, overrides), edited_cfg)


@settings(max_examples=100, deadline=None)
@given(cfg=configs)
def test_no_edit_gives_no_overrides(cfg: dict) -> None:
    assert to_overrides(OmegaConf.create(cfg), OmegaConf.create(cfg)) == []


def test_changed_added_and_deleted_keys() -> None:
    base = {"model": {"hidden": 64, "drop": 0.1}, "name": "a", "tags": [1, 2]}
    edited = {"model": {"hidden": 128}, "name": "it's", "tags": [1], "seed": None}
    assert to_overrides(base, edited) == [
        "~model.drop",
        "model.hidden=128",
        "name='it\\'s'",
        "tags=[1]",
        "+seed=null",
    ]


def test_types_are_kept_apart() -> None:
    assert to_overrides({"a": 1}, {"a": "1"}) == ["a='1'"]
    assert to_overrides({"a": 1}, {"a": 1.0}) == ["a=1.0"]
    assert to_overrides({"a": 1}, {"a": True}) == ["a=true"]


def test_interpolations_are_compared_as_written() -> None:
    assert to_overrides({"a": 1, "b": "${a}"}, {"a": 1, "b": 1}) == ["b=1"]
    assert to_overrides({"a": 1, "b": 1}, {"a": 1, "b": "${a}"}) == ["b='${a}'"]


def test_section_replaced_by_a_value_and_back() -> None:
    base = {"opt": {"lr": 0.1}}
    assert to_overrides(base, {"opt": "sgd"}) == ["opt=sgd"]
    assert to_overrides({"opt": "sgd"}, base) == ["opt={lr:0.1}"]
    assert load_config({"opt": "sgd"}, ["opt={lr:0.1}"]).opt.lr == 0.1


def test_key_that_cannot_be_written_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"the key 'a b' cannot be written as an override"):
        to_overrides({}, {"a b": 1})


def test_a_word_with_a_trailing_newline_is_quoted() -> None:
    # Found by hypothesis: `$` in a regex also matches before a final newline.
    assert to_overrides({}, {"a": "A\n"}) == ["+a='A\n'"]
    assert load_config({}, ["+a='A\n'"]).a == "A\n"


def test_nan_is_equal_to_itself() -> None:
    assert to_overrides({"a": math.nan}, {"a": math.nan}) == []
