"""EnvironmentProvider: the interface, the newer method name, teardown, env keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from kit import ConfigError, EnvironmentProvider
from tests.workloads import (
    Affine,
    KeyedProvider,
    Model,
    NewNameProvider,
    Peeking,
    Shifted,
    ToyProvider,
    expected,
    lines,
    toy_config,
)


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
    one_env = {"env": "inline", "max_envs": 1}  # a second config tears the first env down
    Affine(ToyProvider(first), parallel=one_env).run(range(2))
    gone.joinpath("setup.log").unlink()
    gone.rmdir()  # closing the old model now fails: its log directory is gone
    with pytest.warns(RuntimeWarning, match="tearing down the previous env failed"):
        result = Affine(ToyProvider(toy_config(factor=3)), parallel=one_env).run(range(2))
    assert result.records == expected(range(2), factor=3)


def test_a_failing_teardown_of_the_previous_env_on_a_cluster_warns_and_the_new_run_goes_on(
    tmp_path: Path,
) -> None:
    # Once the next run's (a sweep's next trial's) error, with 0 items run.
    gone = tmp_path / "gone"
    gone.mkdir()
    one_env = {"env": "local", "n_workers": 2, "max_envs": 1}
    Affine(ToyProvider(toy_config(gone, factor=2)), parallel=one_env).run(range(2))
    gone.joinpath("setup.log").unlink()
    gone.rmdir()  # closing the old model on the workers now fails: its log folder is gone
    with pytest.warns(RuntimeWarning, match="tearing down the previous env on a worker failed"):
        result = Affine(ToyProvider(toy_config(factor=3)), parallel=one_env).run(range(4))
    assert result.records == expected(range(4), factor=3)
    assert result.stats.failed == 0


def test_env_keys_name_the_env_by_those_keys_alone(tmp_path: Path) -> None:
    base = KeyedProvider(toy_config(tmp_path, factor=2, offset=1))
    assert base.env_name() == KeyedProvider(toy_config(tmp_path, factor=2, offset=9)).env_name()
    assert base.env_name() != KeyedProvider(toy_config(tmp_path, factor=3, offset=1)).env_name()
    assert base.env_name().startswith("kit-env:tests.workloads.KeyedProvider:")
    # A provider without env_keys names the env by the whole config, as before.
    assert ToyProvider(toy_config(offset=9)).env_name() != ToyProvider(toy_config()).env_name()


def test_while_building_the_provider_sees_only_its_env_keys(tmp_path: Path) -> None:
    built = KeyedProvider(toy_config(tmp_path, factor=2, offset=5)).for_env()
    assert OmegaConf.to_container(built.config) == {"factor": 2, "log_dir": str(tmp_path)}
    assert built.build_env_local()["offset"] == 0  # the toy's default: offset is not there


def test_reading_a_key_outside_env_keys_is_a_named_error_inline() -> None:
    with pytest.raises(ConfigError) as info:
        Affine(Peeking(toy_config(factor=2, offset=5))).run(range(2))
    message = str(info.value)
    assert message.startswith(
        "offset: Peeking read a config key outside its env_keys while building its env"
    )
    assert "expected: one of env_keys: factor" in message
    assert "add 'offset' to Peeking.env_keys" in message
    assert "give forward a `config` parameter" in message


def test_an_env_key_the_config_lacks_is_left_out_and_a_bare_string_is_refused(
    tmp_path: Path,
) -> None:
    class Optional(KeyedProvider):
        env_keys = ("factor", "log_dir", "decoder.options")

    built = Optional(toy_config(tmp_path)).env_config()
    assert OmegaConf.to_container(built) == {"factor": 2, "log_dir": str(tmp_path)}

    class Bare(KeyedProvider):
        env_keys = "factor"  # type: ignore[assignment]

    with pytest.raises(TypeError, match=r"must be a tuple of config keys.*write \('factor',\)"):
        Bare(toy_config()).env_name()


def test_forward_gets_the_runs_config_when_it_asks_for_it(tmp_path: Path) -> None:
    result = Shifted(KeyedProvider(toy_config(tmp_path, factor=2, offset=7))).run(range(3))
    assert [r["y"] for r in result.records] == [7, 9, 11]
    other = Shifted(KeyedProvider(toy_config(tmp_path, factor=2, offset=0))).run(range(3))
    assert [r["y"] for r in other.records] == [0, 2, 4]
    assert len(lines(tmp_path, "setup.log")) == 1  # one env for both configs
