"""ConfigEditor: a form generated from a DictConfig, edited through Kit's overrides."""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w
import traitlets
import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from kit.config import PARALLEL_ENVS, ConfigError
from kit.widgets._config_edits import ConfigEdits
from kit.widgets._style import error_html

#: Keys edited with a dropdown: the schema choices of Kit's own sections.
CHOICES: dict[str, tuple[str, ...]] = {
    "parallel.env": PARALLEL_ENVS,
    "runner.on_error": ("record", "raise"),
}


class _TextOrNumber(traitlets.Unicode):  # type: ignore[type-arg]
    """Text; a number set from code is taken as the text it prints as."""

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = repr(value)
        return super().validate(obj, value)


class NumberText(w.Text):  # type: ignore[misc]
    """A text box for a number: Kit reads what was typed (``parse_number`` in ``_config_edits``).

    ``field.value = 4`` from code works as typing ``4`` does.

    Examples
    --------
    >>> box = NumberText(value="1")
    >>> box.value = 4
    >>> box.value
    '4'
    """

    value = _TextOrNumber(help="The text typed").tag(sync=True)


def field_widget(node: DictConfig, key: Any, full: str, raw: Any) -> tuple[w.Widget, Any]:
    """Return the widget that edits ``key`` of ``node`` (``full`` in the config), and its kind.

    A checkbox for a bool, a text box read as exactly the number typed for
    an int or float, a dropdown for a Kit choice, YAML text for a list, a
    text box for a string, an interpolation as its ``${...}`` text; how it
    is read is :meth:`ConfigEdits.type_in`'s ``kind``.
    """
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
        kind: type | str = "required"
    elif interpolation:
        widget = w.Text(value=str(raw), description=description, layout=layout, style=style)
        kind = "required"
    elif full in CHOICES:
        options = list(CHOICES[full])
        widget = w.Dropdown(
            options=options,
            value=raw if raw in options else None,
            description=description,
            layout=layout,
            style=style,
        )
        kind = "value"
    elif isinstance(raw, bool):
        widget = w.Checkbox(value=raw, description=description, indent=False)
        kind = "value"
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
    elif isinstance(raw, list) or isinstance(node._get_node(key), ListConfig):
        text = yaml.safe_dump(raw, default_flow_style=True).strip()
        widget = w.Text(value=text, description=description, layout=layout, style=style)
        widget.add_class("kit-list")
        kind = "yaml"
    else:
        widget = w.Text(
            value="" if raw is None else str(raw),
            description=description,
            placeholder="null" if raw is None else "",
            layout=layout,
            style=style,
        )
        kind = "text"
    return widget, kind


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
        super().__init__(**kwargs)
        #: The editor's model: the config as loaded and as edited, what was refused.
        self.edits = ConfigEdits(cfg, schemas)
        self.base = self.edits.base
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
        self.value = self.base
        self._rebuild()

    # ------------------------------------------------------------ public API
    @property
    def problems(self) -> list[ConfigError]:
        """Every problem the checked sections have now (see kit.config.config_problems)."""
        return self.edits.problems

    @property
    def overrides(self) -> list[str]:
        """The override list from the config as loaded to the current one."""
        return self.edits.overrides

    def reset(self) -> None:
        """Go back to the config as it was loaded (the sections open stay open)."""
        self.edits.reset()
        self.value = self.edits.value
        self._rebuild()

    def apply(self, override: str) -> bool:
        """Apply one override (``key=value``, ``+key=value``, ``~key``); say if it took."""
        return self._took(self.edits.apply(override))

    def add_key(self, key: str, text: str) -> bool:
        """Add ``key`` with ``text`` parsed as YAML (``1``, ``[1, 2]``, ``{a: 1}``, ``name``)."""
        wrong = self.edits.add_key(key, text)
        self._message.value = error_html(wrong) if wrong else ""
        if wrong is not None:
            return False
        self.value = self.edits.value
        self._new_key.value = self._new_value.value = ""
        self._rebuild()
        return True

    def delete_key(self, key: str) -> bool:
        """Delete ``key`` from the config."""
        if self.apply(f"~{key}"):
            self._rebuild()
            return True
        return False

    def _took(self, took: bool) -> bool:
        """Show the config as edited, or what was refused."""
        if took:
            self.value = self.edits.value
        self._draw_errors()
        return took

    # ------------------------------------------------------------ building
    @traitlets.observe("value")
    def _refresh_views(self, change: Any) -> None:
        cfg = change["new"]
        if cfg is not self.edits.value:
            self.edits.take(cfg)  # set from outside: the model follows
        self._draw_errors()
        self._yaml.value = f"<pre class='kit-yaml'>{html.escape(OmegaConf.to_yaml(cfg))}</pre>"
        lines = self.edits.overrides
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
        widget, kind = field_widget(node, key, full, raw)
        interpolation = OmegaConf.is_interpolation(node, key)
        widget.add_class("kit-field")
        widget.observe(self._setter(full, kind), names="value")
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
    def _setter(self, key: str, kind: type | str) -> Callable[[Any], None]:
        """Apply what is typed into ``key``'s field, read as ``kind`` (see ConfigEdits.type_in)."""

        def on_change(change: Any) -> None:
            self._took(self.edits.type_in(key, change["new"], kind))

        return on_change

    def _draw_errors(self) -> None:
        beside, elsewhere = self.edits.messages(set(self.errors))
        for key, target in self.errors.items():
            target.value = error_html(beside[key]) if beside[key] else ""
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
