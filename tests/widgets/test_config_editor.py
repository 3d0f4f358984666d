"""ConfigEditor, headless: widgets per type, edits through overrides, errors inline."""

from __future__ import annotations

import html
from pathlib import Path

import ipywidgets as w
import pytest

from kit import load_config
from kit.widgets import ConfigEditor
from kit.widgets._config_editor import NumberText

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
    assert isinstance(f["lr"], NumberText) and "kit-number" in f["lr"]._dom_classes
    assert isinstance(f["epochs"], NumberText) and f["epochs"].value == "3"
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


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("2.5", "'2.5' is not a whole number"),
        ("1e3", "'1e3' is not a whole number (write 1000)"),
        ("abc", "'abc' is not a whole number"),
        ("-3", "decoder.beam_size: must be at least 1, got -3"),
    ],
)
def test_a_number_box_takes_exactly_what_was_typed_or_says_why_not(typed: str, says: str) -> None:
    from kit.asr import DecodeProvider
    from kit.examples.asr import CONFIG_PATH

    editor = ConfigEditor(load_config(CONFIG_PATH), schemas=DecodeProvider.config_schemas)
    box = editor.fields["decoder.beam_size"]
    box.value = typed
    assert editor.value.decoder.beam_size == 5 and editor.overrides == []
    shown = html.unescape(editor.errors["decoder.beam_size"].value)
    assert says in shown and "the value stays 5" in shown
    box.value = "3"  # fixed: taken, and the error is gone
    assert editor.value.decoder.beam_size == 3 and editor.errors["decoder.beam_size"].value == ""


def test_a_float_box_reads_exponents_and_code_may_set_numbers(editor: ConfigEditor) -> None:
    editor.fields["lr"].value = "1e-3"
    editor.fields["epochs"].value = 12  # from code, as a notebook cell does
    assert editor.value.lr == 0.001 and editor.value.epochs == 12


def test_every_schema_problem_is_listed_at_its_field_at_once() -> None:
    from kit.asr import DecodeProvider

    cfg = {"decoder": {"engine": "wisper", "beam_size": 0, "mode": "gramar"}, "other": 1}
    editor = ConfigEditor(cfg, schemas=DecodeProvider.config_schemas)
    assert [p.full_key for p in editor.problems] == [
        "decoder.engine",
        "decoder.beam_size",
        "decoder.mode",
    ]
    shown = {key: html.unescape(box.value) for key, box in editor.errors.items()}
    assert "did you mean 'whisper'" in shown["decoder.engine"]
    assert "must be at least 1" in shown["decoder.beam_size"]
    assert "did you mean 'grammar'" in shown["decoder.mode"]
    editor.fields["decoder.engine"].value = "whisper"
    assert [p.full_key for p in editor.problems] == ["decoder.beam_size", "decoder.mode"]
    assert editor.errors["decoder.engine"].value == ""


def test_reset_keeps_open_sections_open(editor: ConfigEditor) -> None:
    groups = {g.get_title(0): g for g in editor._form.children if isinstance(g, w.Accordion)}
    groups["model"].selected_index = 0
    editor.fields["model.hidden"].value = 8
    editor.reset_button.click()
    groups = {g.get_title(0): g for g in editor._form.children if isinstance(g, w.Accordion)}
    assert groups["model"].selected_index == 0 and groups["parallel"].selected_index is None
