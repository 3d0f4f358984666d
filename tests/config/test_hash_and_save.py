"""config_hash and save_config."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from kit import ConfigError, load_config
from kit.config import config_hash, save_config


def test_hash_ignores_key_order_and_sees_values() -> None:
    assert config_hash({"a": 1, "b": {"c": 2, "d": 3}}) == config_hash(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert config_hash({"a": 1}) != config_hash({"a": "1"})
    assert config_hash({"a": 1}) != config_hash({"a": 1.0})


def test_hash_is_of_the_resolved_content() -> None:
    assert config_hash({"a": 2, "b": "${a}"}) == config_hash({"a": 2, "b": 2})


def test_hash_is_stable_across_processes() -> None:
    # Pinned: worker plugins are named by this hash, so it must not change silently.
    assert config_hash({"model": {"hidden": 64}, "lr": 0.1}) == "95c1568e80ea"


def test_save_writes_resolved_yaml_that_loads_back(tmp_path: Path) -> None:
    cfg = load_config({"a": 1, "b": "${a}", "c": [1, {"d": None}]})
    path = save_config(cfg, tmp_path / "out" / "config.yaml")
    assert path.read_text() == "a: 1\nb: 1\nc:\n- 1\n- d: null\n"
    assert load_config(path) == OmegaConf.create({"a": 1, "b": 1, "c": [1, {"d": None}]})


def test_save_with_missing_values_fails_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"1 required value is missing \(\?\?\?\): a"):
        save_config({"a": "???"}, tmp_path / "config.yaml")
    assert list(tmp_path.iterdir()) == []
