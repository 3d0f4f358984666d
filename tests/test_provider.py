"""EnvironmentProvider: the interface, the newer method name, teardown."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from kit import EnvironmentProvider
from tests.workloads import Model, NewNameProvider, ToyProvider, toy_config


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
