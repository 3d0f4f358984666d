"""Jobs described by a config: the items of ``items.file``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from kit import ConfigError, EnvironmentProvider
from kit._from_config import items_of


def test_only_ascii_integers_are_numbers_in_an_items_file(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("3\n-7\n²\n--5\n utt-1 \n# a comment\n\n٣\n")
    cfg = OmegaConf.create({"items": {"file": str(ids)}})
    assert items_of(cfg) == [3, -7, "²", "--5", "utt-1", "٣"]


def test_an_items_file_that_is_not_text_is_a_config_error(tmp_path: Path) -> None:
    ids = tmp_path / "ids.bin"
    ids.write_bytes(b"1\n\xff\xfe2\n")
    with pytest.raises(ConfigError) as info:
        items_of(OmegaConf.create({"items": {"file": str(ids)}}))
    assert str(info.value).startswith(f"items.file: {ids} is not UTF-8 text (byte 2: ")


def test_a_quoted_bound_reads_as_the_number_the_schema_accepted() -> None:
    # A sweep's choice('1') quotes its value: range() said only "'str' object cannot be ...".
    cfg = OmegaConf.create({"items": {"start": "1", "stop": "4"}})
    assert items_of(cfg) == range(1, 4)


@pytest.mark.parametrize(("key", "value"), [("start", 0.5), ("step", True)])
def test_a_range_bound_that_is_no_whole_number_is_a_config_error(key: str, value: object) -> None:
    items = {"start": 0, "stop": 4, key: value}
    with pytest.raises(ConfigError) as info:
        items_of(OmegaConf.create({"items": items}))
    assert str(info.value).startswith(f"items.{key}: {value!r} is not a value of type int")


class Counted(EnvironmentProvider):
    """A provider whose set holds 7 items."""

    def build_env_local(self) -> dict[str, int]:
        return {}

    def make_worker_setup_fn(self) -> Callable[[], dict[str, int]]:
        return dict

    def item_count(self) -> int:
        return 7


class Uncounted(Counted):
    def item_count(self) -> None:
        return None


def test_a_range_without_stop_is_the_providers_whole_set_or_asked_for() -> None:
    cfg = OmegaConf.create({"items": {"start": 2}})
    assert items_of(cfg, Counted(cfg)) == range(2, 7)
    with pytest.raises(ConfigError) as info:
        items_of(cfg, Uncounted(cfg))
    assert str(info.value) == (
        "items.stop: give the end of the range (or items.file); Uncounted cannot say its "
        "set's size\n    full_key: items.stop\n    fix: e.g. `items.stop=100`"
    )
