"""EnvironmentProvider: the interface, the newer method name, teardown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from kit import EnvironmentProvider
from tests.workloads import Affine, Model, NewNameProvider, ToyProvider, expected, toy_config


def test_a_provider_without_its_methods_cannot_be_built() -> None:
    class Empty(EnvironmentProvider):
        pass

    with pytest.raises(TypeError, match="abstract"):
        Empty(OmegaConf.create({}))  # type: ignore[abstract]


def test_the_newer_espnet3_method_name_works() -> None:
    provider = NewNameProvider(toy_config())
    env = provider.worker_setup_fn()()
    assert isinstance(env["model"], Model)


def test_teardown_closes_what_has_close() -> None:
    env = ToyProvider(toy_config()).build_env_local()
    ToyProvider(toy_config()).teardown_env(env)
    assert env["model"].closed


def test_a_setup_fn_that_is_not_callable_is_refused() -> None:
    class Eager(ToyProvider):
        def make_worker_setup_fn(self) -> Any:
            return {"model": 1}

    with pytest.raises(TypeError, match=r"return `setup`, not `setup\(\)`"):
        Eager(toy_config()).worker_setup_fn()


def test_a_setup_fn_that_needs_arguments_is_refused() -> None:
    class Needy(ToyProvider):
        def make_worker_setup_fn(self) -> Any:
            return lambda path: {}

    with pytest.raises(TypeError, match="must be callable with none"):
        Needy(toy_config()).worker_setup_fn()


def test_env_name_follows_class_and_config() -> None:
    a = ToyProvider(toy_config(factor=2)).env_name()
    assert a == ToyProvider(toy_config(factor=2)).env_name()
    assert a != ToyProvider(toy_config(factor=3)).env_name()
    assert a.startswith("kit-env:tests.workloads.ToyProvider:")


def test_a_failing_teardown_of_the_previous_inline_env_warns_and_the_new_run_goes_on(
    tmp_path: Path,
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    first = toy_config(gone, factor=2)
    Affine(ToyProvider(first)).run(range(2))
    gone.joinpath("setup.log").unlink()
    gone.rmdir()  # closing the old model now fails: its log directory is gone
    with pytest.warns(RuntimeWarning, match="tearing down the previous env failed"):
        result = Affine(ToyProvider(toy_config(factor=3))).run(range(2))
    assert result.records == expected(range(2), factor=3)
