"""Env injection into forward by keyword name, and its errors (raised before any item runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import Runner
from tests.workloads import Affine, AllEnv, NeedsTokenizer, Scaled, ToyProvider, lines, toy_config


def test_env_entries_reach_forward_by_name() -> None:
    result = Affine(ToyProvider(toy_config())).run([3])
    assert result.records == [{"idx": 3, "y": 7}]


def test_var_keyword_receives_every_entry() -> None:
    assert AllEnv(ToyProvider(toy_config())).run([0]).records == [["model", "offset", "pid"]]


def test_explicit_keywords_reach_forward() -> None:
    assert Scaled(ToyProvider(toy_config())).run([1, 2], scale=0.5).records == [1.0, 2.0]


def test_an_explicit_keyword_that_is_also_in_the_env_is_an_error() -> None:
    with pytest.raises(TypeError) as info:
        Affine(ToyProvider(toy_config())).run([1], offset=3)
    assert str(info.value) == (
        "Affine.forward: keyword 'offset' is passed explicitly and also exists in the env; "
        "rename one of them"
    )


def test_a_missing_env_entry_fails_before_any_item_runs(tmp_path: Path) -> None:
    with pytest.raises(TypeError) as info:
        NeedsTokenizer(ToyProvider(toy_config(tmp_path, log_calls=True))).run(range(5))
    assert str(info.value) == (
        "NeedsTokenizer.forward needs 'tokenizer', which the env does not have "
        "(the env has: model, offset, pid); add it to the provider's env or give it a default"
    )
    assert lines(tmp_path, "calls.log") == []


def test_a_missing_env_entry_on_a_cluster_fails_before_any_item_runs(
    tmp_path: Path, local: dict
) -> None:
    with pytest.raises(TypeError, match="needs 'tokenizer', which the env does not have"):
        NeedsTokenizer(ToyProvider(toy_config(tmp_path)), parallel=local).run(range(5))


def test_an_unknown_explicit_keyword_is_an_error() -> None:
    with pytest.raises(TypeError, match="has no parameter 'scael'"):
        Scaled(ToyProvider(toy_config())).run([1], scael=2)


def test_forward_must_be_a_staticmethod() -> None:
    with pytest.raises(TypeError, match=r"Bound.forward must be a @staticmethod"):

        class Bound(Runner):
            def forward(self, idx):  # type: ignore[no-untyped-def, override]
                return idx


def test_a_runner_without_forward_cannot_be_built() -> None:
    with pytest.raises(TypeError, match="must define a @staticmethod forward"):
        Runner(ToyProvider(toy_config()))
