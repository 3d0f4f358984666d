"""ConfigEditor, headless: widgets per type, edits through overrides, errors inline."""

from __future__ import annotations

from pathlib import Path

import ipywidgets as w
import pytest

from kit import load_config
from widgets import ConfigEditor

CONFIG = {
    "lr": 0.1,
    "epochs": 3,
    "name": "tiny",
    "shuffle": True,
    "tags": [1, 2],
    "data": "???",
    "width": "${model.hidden}",
    "model": {"hidden": 64, "act": None},
    "parallel": {"env": "local", "n_workers": 2},
}


@pytest.fixture
def editor() -> ConfigEditor:
    return ConfigEditor(CONFIG)


def test_widgets_follow_the_value_types(editor: ConfigEditor) -> None:
    f = editor.fields
    assert isinstance(f["lr"], w.FloatText)
    assert isinstance(f["epochs"], w.IntText)
    assert isinstance(f["name"], w.Text)
    assert isinstance(f["shuffle"], w.Checkbox)
    assert isinstance(f["parallel.env"], w.Dropdown) and "slurm" in f["parallel.env"].options
    assert f["tags"].value == "[1, 2]" and "kit-list" in f["tags"]._dom_classes
    assert f["data"].description == "data *" and "kit-required" in f["data"]._dom_classes
    assert f["width"].value == "${model.hidden}"
    assert "= 64" in editor.resolved["width"].value
    groups = [c for c in editor._form.children if isinstance(c, w.Accordion)]
    assert [g.get_title(0) for g in groups] == ["model", "parallel"]


def test_edits_change_value_and_are_observable(editor: ConfigEditor) -> None:
    seen = []
    editor.observe(lambda change: seen.append(change["new"]), names="value")
    editor.fields["model.hidden"].value = 128
    editor.fields["shuffle"].value = False
    editor.fields["name"].value = "big model"
    editor.fields["tags"].value = "[3, 4]"
    editor.fields["parallel.env"].value = "slurm"
    assert editor.value.model.hidden == 128 and editor.value.width == 128
    assert "= 128" in editor.resolved["width"].value
    assert len(seen) == 5
    assert editor.overrides == [
        "name='big model'",
        "shuffle=false",
        "tags=[3,4]",
        "model.hidden=128",
        "parallel.env=slurm",
    ]
    assert "parallel.env=slurm" in editor._overrides.value
    assert "hidden: 128" in editor._yaml.value
    assert load_config(CONFIG, editor.overrides) == editor.value


def test_an_invalid_value_shows_the_config_error_and_keeps_value(editor: ConfigEditor) -> None:
    before = editor.value
    editor.fields["parallel.n_workers"].value = 0
    assert editor.value is before
    assert (
        "parallel.n_workers: must be at least 1, got 0" in editor.errors["parallel.n_workers"].value
    )
    editor.fields["parallel.n_workers"].value = 3
    assert editor.errors["parallel.n_workers"].value == ""
    assert editor.value.parallel.n_workers == 3


def test_bad_yaml_in_a_list_is_shown(editor: ConfigEditor) -> None:
    editor.fields["tags"].value = "[1, 2"
    assert "not valid YAML" in editor.errors["tags"].value
    assert list(editor.value.tags) == [1, 2]


def test_required_and_interpolated_fields(editor: ConfigEditor) -> None:
    editor.fields["data"].value = "/data/train.jsonl"
    assert editor.value.data == "/data/train.jsonl"
    editor.fields["width"].value = "${epochs}"
    assert editor.value.width == 3 and "= 3" in editor.resolved["width"].value
    editor.fields["width"].value = "${nope}"
    assert "unresolved" in editor.resolved["width"].value


def test_add_and_delete_keys_then_reset(editor: ConfigEditor) -> None:
    assert editor.add_key("model.dropout", "0.2")
    assert editor.value.model.dropout == 0.2 and "model.dropout" in editor.fields
    assert not editor.add_key("lr", "1")  # exists already
    assert "adds a key that already exists" in editor._message.value
    assert editor.delete_key("shuffle")
    assert "shuffle" not in editor.value and "shuffle" not in editor.fields
    assert editor.overrides == ["~shuffle", "+model.dropout=0.2"]
    editor.reset_button.click()
    assert editor.overrides == [] and "shuffle" in editor.fields


def test_the_add_button_reads_the_key_and_value_boxes(editor: ConfigEditor) -> None:
    editor._new_key.value = "seed"
    editor._new_value.value = "7"
    editor.add_button.click()
    assert editor.value.seed == 7


def test_a_yaml_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\nb: ${a}\n")
    assert ConfigEditor(load_config(path)).value.b == 1
