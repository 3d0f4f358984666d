"""Loading configs from YAML files, dicts and DictConfigs, and composing defaults lists."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from kit import ConfigError, load_config
from kit.config import resolve_config


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_loads_a_yaml_file_with_interpolation(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "model:\n  hidden: 64\nwidth: ${model.hidden}\n")
    cfg = load_config(path)
    assert cfg.width == 64
    assert OmegaConf.is_interpolation(cfg, "width")


def test_loads_a_path_given_as_a_string(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "a: 1\n")
    assert load_config(str(path)) == {"a": 1}


def test_a_dictconfig_source_is_copied_not_changed() -> None:
    source = OmegaConf.create({"a": 1})
    cfg = load_config(source, ["a=2"])
    assert cfg.a == 2 and source.a == 1


def test_mandatory_values_stay_missing_until_resolved() -> None:
    cfg = load_config({"data": {"path": "???"}, "lr": "???"})
    assert OmegaConf.is_missing(cfg.data, "path")
    with pytest.raises(ConfigError) as info:
        resolve_config(cfg)
    assert str(info.value).splitlines()[0] == ("2 required values are missing (???): data.path, lr")
    assert "fix: set them in the YAML file or as overrides, e.g. `data.path=... lr=...`" in str(
        info.value
    )
    assert info.value.full_key == "data.path"


def test_defaults_compose_in_order_with_the_file_itself_last(tmp_path: Path) -> None:
    write(tmp_path / "base.yaml", "a: 1\nb: 1\nc: 1\n")
    write(tmp_path / "conf" / "more.yaml", "b: 2\nc: 2\n")
    main = write(tmp_path / "main.yaml", "defaults:\n  - base.yaml\n  - conf/more\nc: 3\n")
    assert load_config(main) == {"a": 1, "b": 2, "c": 3}


def test_self_entry_puts_the_file_before_later_defaults(tmp_path: Path) -> None:
    write(tmp_path / "late.yaml", "a: late\n")
    main = write(tmp_path / "main.yaml", "defaults:\n  - _self_\n  - late\na: own\n")
    assert load_config(main).a == "late"


def test_group_entry_loads_a_file_under_its_group_key(tmp_path: Path) -> None:
    write(tmp_path / "model" / "small.yaml", "hidden: 32\n")
    main = write(tmp_path / "main.yaml", "defaults:\n  - model: small\nlr: 0.1\n")
    assert load_config(main) == {"model": {"hidden": 32}, "lr": 0.1}


def test_nested_defaults_are_relative_to_the_including_file(tmp_path: Path) -> None:
    write(tmp_path / "conf" / "leaf.yaml", "x: 1\n")
    write(tmp_path / "conf" / "mid.yaml", "defaults:\n  - leaf\ny: 2\n")
    main = write(tmp_path / "main.yaml", "defaults:\n  - conf/mid.yaml\n")
    assert load_config(main) == {"x": 1, "y": 2}


def test_a_defaults_cycle_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "defaults:\n  - b\n")
    write(tmp_path / "b.yaml", "defaults:\n  - a\n")
    with pytest.raises(ConfigError, match="defaults list includes itself"):
        load_config(tmp_path / "a.yaml")


def test_a_missing_defaults_file_names_the_entry_and_the_file(tmp_path: Path) -> None:
    main = write(tmp_path / "main.yaml", "defaults:\n  - nope\n")
    with pytest.raises(ConfigError) as info:
        load_config(main)
    message = str(info.value)
    assert message.startswith(f"defaults[0]: cannot find the file {tmp_path / 'nope'}")
    assert f"file: {main}" in message
    assert info.value.source == str(main)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nope\.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_yaml_syntax_error_gives_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", "a: 1\nb:\n  c: 2\n d: 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"YAML syntax error in {path}, line 4, column 2:")
    assert info.value.source == str(path)


def test_a_top_level_list_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "list.yaml", "- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(path)


def test_an_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    assert load_config(write(tmp_path / "empty.yaml", "")) == {}


def test_bad_source_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="YAML path, a dict or a DictConfig"):
        load_config(42)  # type: ignore[arg-type]


def test_an_unresolvable_interpolation_names_its_key() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_config(load_config({"a": {"b": "${nope}"}}))
    assert str(info.value).splitlines()[0] == (
        "a.b: cannot resolve interpolation: Interpolation key 'nope' not found"
    )


# ----------------------------------------------------------- files that are not configs
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdef", "bcdefg", strict=True)
)


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value).splitlines()[0]


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    path = write(tmp_path / "bomb.yaml", ALIAS_BOMB)
    assert refused(path) == (
        f"{path} expands to more than 100,000 values through YAML aliases (&name / *name)"
    )


def test_a_huge_file_is_refused_by_its_size(tmp_path: Path) -> None:
    path = write(tmp_path / "huge.yaml", "k: " + "v" * (1 << 20) + "\n")
    assert refused(path) == f"{path} has 1,048,580 bytes; a config may have at most 1,048,576"


def test_text_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"a: 1\nname: caf\xe9\n")
    assert refused(path) == f"{path} is not UTF-8 text (byte 14, line 2)"


def test_binary_garbage_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    assert refused(path).startswith(str(path))


def test_a_directory_a_pipe_and_a_symlink_loop_are_named(tmp_path: Path) -> None:
    import os

    (tmp_path / "d.yaml").mkdir()
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "one.yaml").symlink_to(tmp_path / "two.yaml")
    (tmp_path / "two.yaml").symlink_to(tmp_path / "one.yaml")
    assert refused(tmp_path / "d.yaml") == f"{tmp_path / 'd.yaml'} is a directory, not a YAML file"
    assert refused(tmp_path / "pipe.yaml") == (
        f"{tmp_path / 'pipe.yaml'} is not a regular file (a pipe or a device)"
    )
    assert refused(tmp_path / "one.yaml").startswith("cannot read ")
    assert "Symlink loop" in refused(tmp_path / "one.yaml")
    too_long = tmp_path / ("x" * 300 + ".yaml")
    assert refused(too_long) == f"cannot read {too_long}: File name too long"
