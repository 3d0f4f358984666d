"""Hydra-style overrides applied by load_config."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import omegaconf
import pytest
from omegaconf import OmegaConf

from kit import ConfigError, load_config

BASE = {"model": {"hidden": 64, "name": "tiny"}, "lr": 0.1, "parallel": {"env": "local"}}


@pytest.mark.parametrize(
    ("override", "key", "expected"),
    [
        ("lr=0.5", "lr", 0.5),
        ("model.hidden=128", "model.hidden", 128),
        ("model.name='big model'", "model.name", "big model"),
        ("model.name=null", "model.name", None),
        ("lr=1e-3", "lr", 0.001),
        ("model.hidden=true", "model.hidden", True),
        ("+seed=3", "seed", 3),
        ("+model.layers=[1,2,3]", "model.layers", [1, 2, 3]),
        ("++lr=2", "lr", 2),
        ("++fresh.key=x", "fresh.key", "x"),
        ("+extra={a: 1, b: [x, y]}", "extra", {"a": 1, "b": ["x", "y"]}),
    ],
)
def test_override_values_parse_as_in_hydra(override: str, key: str, expected: object) -> None:
    from omegaconf import OmegaConf

    cfg = load_config(BASE, [override])
    value = OmegaConf.select(cfg, key)
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    assert value == expected
    assert type(value) is type(expected)


def test_delete_removes_the_key() -> None:
    assert "name" not in load_config(BASE, ["~model.name"]).model


def test_a_mapping_merges_into_an_existing_section() -> None:
    cfg = load_config(BASE, ["model={hidden: 32}"])
    assert cfg.model == {"hidden": 32, "name": "tiny"}
    # A key it adds is refused as `model.layers=2` is (as Hydra's struct configs do),
    # unless the override says it adds: `++`.
    with pytest.raises(ConfigError) as refused:
        load_config(BASE, ["model={layers: 2}"])
    assert refused.value.full_key == "model.layers"
    assert "to add it, write `++model={layers: 2}`" in str(refused.value)
    cfg = load_config(BASE, ["++model={layers: 2}"])
    assert cfg.model == {"hidden": 64, "name": "tiny", "layers": 2}


def test_overrides_apply_in_order() -> None:
    assert load_config(BASE, ["lr=1", "lr=2"]).lr == 2


def test_overrides_apply_after_composition(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("lr: 0.1\nwarm: ${lr}\n")
    assert load_config(path, ["lr=0.3"]).warm == 0.3


def test_changing_a_missing_key_suggests_adding_it_and_the_closest_key() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(BASE, ["model.hiden=3"])
    assert str(info.value) == (
        "model.hiden: override 'model.hiden=3' names a key that does not exist;"
        " did you mean 'model.hidden'?\n"
        "    full_key: model.hiden\n"
        "    fix: to add it, write `+model.hiden=3`; or write `model.hidden=...`"
        " to change the existing key"
    )
    assert info.value.full_key == "model.hiden"
    assert info.value.source is None


def test_adding_an_existing_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"adds a key that already exists") as info:
        load_config(BASE, ["+lr=3"])
    assert "`++lr=...` to add or change" in str(info.value)


def test_deleting_a_missing_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"override '~model.size' names a key that does not"):
        load_config(BASE, ["~model.size"])


def test_a_sweep_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(BASE, ["lr=0.1,0.2"])
    assert str(info.value).splitlines()[0] == (
        "lr: override 'lr=0.1,0.2' is a sweep; sweeps are not supported here"
    )
    assert "kit.sweep(config, overrides)" in str(info.value)  # where sweeps are


def test_a_range_sweep_is_rejected() -> None:
    with pytest.raises(ConfigError, match="sweeps are not supported here"):
        load_config(BASE, ["model.hidden=range(1,4)"])


def test_a_syntax_error_shows_the_override_and_the_forms() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(BASE, ["lr=[1"])
    message = str(info.value)
    assert message.startswith("cannot parse override 'lr=[1':")
    assert "`+key=value` to add" in message


def test_a_single_string_is_refused() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        load_config(BASE, "lr=1")


def test_a_bad_override_of_a_kit_section_names_the_override() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(BASE, ["parallel.env=slurmm"])
    assert "from: override 'parallel.env=slurmm'" in str(info.value)


def test_a_config_or_override_nested_too_deep_is_a_config_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(deep)
    assert str(info.value).startswith(f"{deep} nests too deep to read")
    with pytest.raises(ConfigError) as info:
        load_config({"a": 1}, ["+x=" + "[" * 3000 + "]" * 3000])
    assert str(info.value).startswith("override '+x=[[[[[[[[[")
    assert "nests too deep to read" in str(info.value)


def test_a_list_element_is_set_by_its_index_as_in_hydra() -> None:
    cfg = load_config({"x": [1, {"a": 1}]}, ["x.0=5", "x.1.a=2"])
    assert OmegaConf.to_container(cfg) == {"x": [5, {"a": 2}]}
    assert load_config({"x": [1, 2, 3]}, ["~x.1"]).x == [1, 3]


def test_a_delete_with_a_value_deletes_only_a_key_holding_it() -> None:
    cfg = load_config({"a": 1, "b": None, "c": "???"}, ["~b=null", "~c=???"])
    assert OmegaConf.to_container(cfg) == {"a": 1}
    with pytest.raises(ConfigError) as info:
        load_config({"a": 1}, ["~a=null"])
    assert str(info.value).startswith("a: override '~a=null' expects the value null, but it is 1")


@dataclasses.dataclass
class User:
    name: str = "nobody"
    age: int = 0


@dataclasses.dataclass
class Users:
    users: list[User] = dataclasses.field(default_factory=list)


def test_a_list_of_mappings_on_a_typed_list_becomes_its_type_as_in_hydra() -> None:
    cfg = load_config(OmegaConf.structured(Users), ["users=[{name:bond,age:7}]"])
    assert OmegaConf.to_object(cfg).users == [User("bond", 7)]
    with pytest.raises(ConfigError, match="users"):
        load_config(OmegaConf.structured(Users), ["users=[{name:bond,age:old}]"])


@dataclasses.dataclass
class Unset:
    users: list[User] = omegaconf.MISSING
    by_name: dict[str, User] = omegaconf.MISSING
    maybe: list[User] | None = None
    one: User = omegaconf.MISSING


@pytest.mark.parametrize(
    ("override", "made"),
    [
        ("users=[{name:bond}]", {"users": [User("bond")]}),
        ("by_name={q:{age:3}}", {"by_name": {"q": User(age=3)}}),
        ("maybe=[{name:m}]", {"maybe": [User("m")]}),
        ("one={name:z}", {"one": User("z")}),
    ],
)
def test_a_typed_list_or_mapping_left_missing_or_null_takes_its_type_as_in_hydra(
    override: str, made: dict
) -> None:
    cfg = load_config(OmegaConf.structured(Unset), [override])
    key = next(iter(made))
    assert OmegaConf.to_object(cfg[key]) == made[key]
    with pytest.raises(ConfigError, match=r"Key 'agee' not in 'User'"):
        load_config(OmegaConf.structured(Unset), ["users=[{name:bond,agee:3}]"])
