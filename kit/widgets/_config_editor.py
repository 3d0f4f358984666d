"""ConfigEditor: a form generated from a DictConfig, edited through Kit's overrides."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w
import traitlets
import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from kit.config import (
    PARALLEL_ENVS,
    ConfigError,
    config_problems,
    encode_value,
    load_config,
    to_overrides,
)
from kit.widgets._style import error_html

#: Keys edited with a dropdown: the schema choices of Kit's own sections.
CHOICES: dict[str, tuple[str, ...]] = {
    "parallel.env": PARALLEL_ENVS,
    "runner.on_error": ("record", "raise"),
}


def parse_number(text: str, kind: type) -> int | float:
    """Read ``text`` as an ``int`` or ``float`` exactly as typed, or raise ValueError saying why.

    Examples
    --------
    >>> parse_number(" 42 ", int), parse_number("2.5", float), parse_number("1e3", float)
    (42, 2.5, 1000.0)
    >>> parse_number("2.5", int)
    Traceback (most recent call last):
    ...
    ValueError: '2.5' is not a whole number
    >>> parse_number("1e3", int)
    Traceback (most recent call last):
    ...
    ValueError: '1e3' is not a whole number (write 1000)
    """
    typed = text.strip().replace("_", "")
    if kind is int:
        if re.fullmatch(r"[+-]?\d+", typed):
            return int(typed)
        hint = ""
        try:
            as_float = float(typed)
            if as_float.is_integer() and abs(as_float) < 1e18:
                hint = f" (write {int(as_float)})"
        except ValueError:
            pass
        raise ValueError(f"{text.strip()!r} is not a whole number{hint}")
    try:
        return float(typed)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number") from None


class _TextOrNumber(traitlets.Unicode):  # type: ignore[type-arg]
    """Text; a number set from code is taken as the text it prints as."""

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = repr(value)
        return super().validate(obj, value)


class NumberText(w.Text):  # type: ignore[misc]
    """A text box for a number: Kit reads what was typed (:func:`parse_number`).

    ``field.value = 4`` from code works as typing ``4`` does.

    Examples
    --------
    >>> box = NumberText(value="1")
    >>> box.value = 4
    >>> box.value
    '4'
    """

    value = _TextOrNumber(help="The text typed").tag(sync=True)


class ConfigEditor(w.VBox):  # type: ignore[misc]
    """Edit an OmegaConf config in a form; ``.value`` is the current DictConfig.

    Widgets follow the values: a checkbox for a bool, a text box read as
    exactly the number typed for an int or float (``2.5`` in an integer
    field is an error, never 25; no scroll-wheel edits), a text box for a
    string, a dropdown for a Kit choice (``parallel.env``), YAML text for a
    list, a collapsible group for a
    section. ``???`` fields are marked required; an interpolation is edited
    as its ``${...}`` text with the resolved value beside it. Every edit is
    applied as an override (``key=value``) with :func:`kit.load_config`, so
    an invalid value shows the ConfigError next to its field and leaves
    ``.value`` unchanged. The YAML and overrides views, Reset, and adding and
    deleting keys are below the form.

    Examples
    --------
    >>> editor = ConfigEditor({"lr": 0.1, "model": {"layers": 2}})
    >>> editor.fields["model.layers"].value = 4
    >>> editor.value.model.layers, editor.overrides
    (4, ['model.layers=4'])
    """

    value = traitlets.Instance(DictConfig)

    def __init__(
        self,
        cfg: DictConfig | dict[str, Any],
        *,
        schemas: Mapping[str, type] | None = None,
        **kwargs: Any,
    ) -> None:
        base = load_config(cfg)
        super().__init__(**kwargs)
        self.base = base
        self.schemas = dict(schemas or {})
        #: Every problem the checked sections have now (see kit.config.config_problems).
        self.problems: list[ConfigError] = []
        self._input_errors: dict[str, str] = {}
        self._open: set[str] = set()
        self.fields: dict[str, w.Widget] = {}
        self.errors: dict[str, w.HTML] = {}
        self.resolved: dict[str, w.HTML] = {}
        self._form = w.VBox()
        self._yaml = w.HTML()
        self._overrides = w.HTML()
        self._message = w.HTML()
        reset = w.Button(description="Reset", icon="undo", tooltip="back to the config as loaded")
        reset.on_click(lambda _: self.reset())
        self._new_key = w.Text(placeholder="new.key", layout=w.Layout(width="200px"))
        self._new_value = w.Text(placeholder="value (YAML)", layout=w.Layout(width="200px"))
        add = w.Button(description="Add key", icon="plus")
        add.on_click(lambda _: self.add_key(self._new_key.value, self._new_value.value))
        self.reset_button, self.add_button = reset, add
        views = w.Accordion(children=[self._yaml, self._overrides])
        views.set_title(0, "YAML")
        views.set_title(1, "overrides")
        self.children = [
            self._form,
            w.HBox([self._new_key, self._new_value, add, reset]),
            self._message,
            views,
        ]
        self.value = base
        self._rebuild()

    # ------------------------------------------------------------ public API
    @property
    def overrides(self) -> list[str]:
        """The override list from the config as loaded to the current one."""
        return to_overrides(self.base, self.value)

    def reset(self) -> None:
        """Go back to the config as it was loaded (the sections open stay open)."""
        self._input_errors.clear()
        self.value = self.base
        self._rebuild()

    def apply(self, override: str) -> bool:
        """Apply one override (``key=value``, ``+key=value``, ``~key``); say if it took."""
        key = override.lstrip("+~").split("=", 1)[0]
        try:
            candidate = load_config(self.value, [override])
        except ConfigError as exc:
            self._show_error(key, str(exc))
            return False
        # A value its schema refuses (a beam size of -3) is refused as it is typed.
        known = {problem.full_key for problem in self.problems}
        for problem in config_problems(candidate, self.schemas):
            where = problem.full_key or ""
            if where not in known and (where == key or where.startswith(f"{key}.")):
                self._show_error(key, f"{problem}\nthe value stays {self._current(key)!r}")
                return False
        self._show_error(key, "")
        self.value = candidate
        return True

    def add_key(self, key: str, text: str) -> bool:
        """Add ``key`` with ``text`` parsed as YAML (``1``, ``[1, 2]``, ``{a: 1}``, ``name``)."""
        key = key.strip()
        try:
            parsed = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as exc:
            self._message.value = error_html(f"{key}: the value is not valid YAML: {exc}")
            return False
        if not key:
            self._message.value = error_html("give the new key's dotted name, e.g. model.dropout")
            return False
        try:
            candidate = load_config(self.value, [f"+{key}={encode_value(parsed)}"])
        except ConfigError as exc:
            self._message.value = error_html(str(exc))
            return False
        self._message.value = ""
        self.value = candidate
        self._new_key.value = self._new_value.value = ""
        self._rebuild()
        return True

    def delete_key(self, key: str) -> bool:
        """Delete ``key`` from the config."""
        if self.apply(f"~{key}"):
            self._rebuild()
            return True
        return False

    # ------------------------------------------------------------ building
    @traitlets.observe("value")
    def _refresh_views(self, change: Any) -> None:
        cfg = change["new"]
        self.problems = config_problems(cfg, self.schemas)
        self._draw_errors()
        self._yaml.value = f"<pre class='kit-yaml'>{html.escape(OmegaConf.to_yaml(cfg))}</pre>"
        lines = to_overrides(self.base, cfg)
        shown = "\n".join(lines) if lines else "(no changes)"
        self._overrides.value = f"<pre class='kit-overrides'>{html.escape(shown)}</pre>"
        for key, label in self.resolved.items():
            label.value = self._resolved_text(cfg, key)

    def _opened(self, section: str, change: Any) -> None:
        if change["new"] is None:
            self._open.discard(section)
        else:
            self._open.add(section)

    def _rebuild(self) -> None:
        self.fields.clear()
        self.errors.clear()
        self.resolved.clear()
        self._form.children = self._rows(self.value, "")
        self._draw_errors()

    def _rows(self, node: DictConfig, prefix: str) -> list[w.Widget]:
        rows: list[w.Widget] = []
        # One conversion per section (not per field), values as written (unresolved).
        raw_values = OmegaConf.to_container(node, resolve=False)
        assert isinstance(raw_values, dict)
        for key in node.keys():  # noqa: SIM118 - keys() also lists ??? entries
            full = f"{prefix}.{key!s}" if prefix else str(key)
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
                group = w.Accordion(children=[w.VBox(self._rows(child, full))])
                group.set_title(0, full)
                group.add_class("kit-group")
                # A rebuilt form (Reset, a key added) keeps open what the user opened.
                group.selected_index = 0 if full in self._open else None
                group.observe(functools.partial(self._opened, full), names="selected_index")
                rows.append(group)
            else:
                rows.append(self._field(node, key, full, raw_values[key]))
        return rows

    def _field(self, node: DictConfig, key: Any, full: str, raw: Any) -> w.Widget:
        description = str(key)
        missing = OmegaConf.is_missing(node, key)
        interpolation = OmegaConf.is_interpolation(node, key)
        layout = w.Layout(width="360px")
        style = {"description_width": "140px"}
        widget: w.Widget
        if missing:
            widget = w.Text(
                value="",
                placeholder="required (???)",
                description=f"{description} *",
                layout=layout,
                style=style,
            )
            widget.add_class("kit-required")
            setter = self._text_setter(full, allow_empty=False)
        elif interpolation:
            widget = w.Text(value=str(raw), description=description, layout=layout, style=style)
            setter = self._text_setter(full, allow_empty=False)
        elif full in CHOICES:
            options = list(CHOICES[full])
            widget = w.Dropdown(
                options=options,
                value=raw if raw in options else None,
                description=description,
                layout=layout,
                style=style,
            )
            setter = self._value_setter(full)
        elif isinstance(raw, bool):
            widget = w.Checkbox(value=raw, description=description, indent=False)
            setter = self._value_setter(full)
        elif isinstance(raw, int | float):
            # A text box read by Kit, not a number box: the browser's number input turned
            # "2.5" into 25 and "1e3" into 13, and a scroll over it changed the value.
            kind = int if isinstance(raw, int) else float
            widget = NumberText(
                value=repr(raw),
                description=description,
                layout=layout,
                style=style,
                continuous_update=False,  # on Enter or leaving the box, not mid-number
            )
            widget.add_class("kit-number")
            setter = self._number_setter(full, kind)
        elif isinstance(raw, list) or isinstance(node._get_node(key), ListConfig):
            text = yaml.safe_dump(raw, default_flow_style=True).strip()
            widget = w.Text(value=text, description=description, layout=layout, style=style)
            widget.add_class("kit-list")
            setter = self._yaml_setter(full)
        else:
            widget = w.Text(
                value="" if raw is None else str(raw),
                description=description,
                placeholder="null" if raw is None else "",
                layout=layout,
                style=style,
            )
            setter = self._text_setter(full, allow_empty=True)
        widget.add_class("kit-field")
        widget.observe(setter, names="value")
        self.fields[full] = widget
        error = w.HTML()
        self.errors[full] = error
        delete = w.Button(icon="trash", tooltip=f"delete {full}", layout=w.Layout(width="36px"))
        delete.on_click(lambda _: self.delete_key(full))
        parts: list[w.Widget] = [widget]
        if interpolation:
            resolved = w.HTML(self._resolved_text(self.value, full))
            self.resolved[full] = resolved
            parts.append(resolved)
        parts.append(delete)
        return w.VBox([w.HBox(parts), error])

    # ------------------------------------------------------------ edits
    def _value_setter(self, key: str) -> Callable[[Any], None]:
        def on_change(change: Any) -> None:
            self.apply(f"{key}={encode_value(change['new'])}")

        return on_change

    def _number_setter(self, key: str, kind: type) -> Callable[[Any], None]:
        def on_change(change: Any) -> None:
            try:
                number = parse_number(change["new"], kind)
            except ValueError as exc:
                self._show_error(key, f"{key}: {exc}; the value stays {self._current(key)!r}")
                return
            self.apply(f"{key}={encode_value(number)}")

        return on_change

    def _current(self, key: str) -> Any:
        return OmegaConf.select(self.value, key, default=None)

    def _text_setter(self, key: str, allow_empty: bool) -> Callable[[Any], None]:
        def on_change(change: Any) -> None:
            text = change["new"]
            if text == "" and allow_empty:
                self.apply(f"{key}=null")
            elif text == "":
                self._show_error(key, f"{key}: a value is required")
            else:
                self.apply(f"{key}={encode_value(text)}")

        return on_change

    def _yaml_setter(self, key: str) -> Callable[[Any], None]:
        def on_change(change: Any) -> None:
            try:
                parsed = yaml.safe_load(change["new"])
            except yaml.YAMLError as exc:
                self._show_error(key, f"{key}: not valid YAML: {exc}")
                return
            self.apply(f"{key}={encode_value(parsed)}")

        return on_change

    def _show_error(self, key: str, message: str) -> None:
        """Show (or clear, with "") what was wrong with the input typed for ``key``."""
        if message:
            self._input_errors[key] = message
        else:
            self._input_errors.pop(key, None)
        self._draw_errors()

    def _draw_errors(self) -> None:
        # Next to each field: what was typed into it and refused, else its problem in
        # the config as it stands; all of them at once, before anything runs.
        by_key = {problem.full_key or "": str(problem) for problem in self.problems}
        for key, target in self.errors.items():
            message = self._input_errors.get(key) or by_key.pop(key, "")
            target.value = error_html(message) if message else ""
        elsewhere = [message for key, message in by_key.items() if key not in self.errors]
        elsewhere += [m for k, m in self._input_errors.items() if k not in self.errors]
        self._message.value = error_html("\n".join(elsewhere)) if elsewhere else ""

    @staticmethod
    def _resolved_text(cfg: DictConfig, key: str) -> str:
        try:
            value = OmegaConf.select(cfg, key, throw_on_missing=True)
            shown = html.escape(
                repr(OmegaConf.to_container(value) if OmegaConf.is_config(value) else value)
            )
            return f"<span class='kit-resolved' style='color:#555'>= {shown}</span>"
        except Exception as exc:  # an interpolation that does not resolve (yet)
            reason = html.escape(str(exc).splitlines()[0])
            return f"<span class='kit-resolved' style='color:#c92a2a'>unresolved: {reason}</span>"
