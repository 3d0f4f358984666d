"""What a config editor does, without a widget: edits applied as overrides, and what they refuse.

:class:`ConfigEdits` is the config editor's model: the config as loaded and
as edited, every edit applied as an override through :func:`kit.load_config`
(so a bad one is refused with the ConfigError, the config unchanged), the
problems its checked sections have, and what was typed and refused, by key.
The editor (:class:`~kit.widgets.ConfigEditor`) draws it as a form.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from kit.config import ConfigError, config_problems, encode_value, load_config, to_overrides


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


class ConfigEdits:
    """A config as loaded and as edited; edits are overrides, refused ones said by key.

    Examples
    --------
    >>> edits = ConfigEdits({"lr": 0.1, "model": {"layers": 2}})
    >>> edits.type_in("model.layers", "4", int), edits.overrides
    (True, ['model.layers=4'])
    >>> edits.type_in("model.layers", "2.5", int), edits.value.model.layers
    (False, 4)
    >>> edits.refused["model.layers"]
    "model.layers: '2.5' is not a whole number; the value stays 4"
    """

    def __init__(
        self, cfg: DictConfig | dict[str, Any], schemas: Mapping[str, type] | None = None
    ) -> None:
        self.base = load_config(cfg)
        self.schemas = dict(schemas or {})
        self.value = self.base
        #: Every problem the checked sections have now (see kit.config.config_problems).
        self.problems: list[ConfigError] = config_problems(self.base, self.schemas)
        #: What was typed for a key and refused, by key, until that key takes a value.
        self.refused: dict[str, str] = {}

    @property
    def overrides(self) -> list[str]:
        """The override list from the config as loaded to the current one."""
        return to_overrides(self.base, self.value)

    def take(self, cfg: DictConfig) -> None:
        """Make ``cfg`` the config as edited (checked already)."""
        self.value = cfg
        self.problems = config_problems(cfg, self.schemas)

    def reset(self) -> None:
        """Go back to the config as it was loaded."""
        self.refused.clear()
        self.take(self.base)

    def current(self, key: str) -> Any:
        """Return ``key``'s value now (None if it has none)."""
        return OmegaConf.select(self.value, key, default=None)

    def refuse(self, key: str, message: str) -> None:
        """Say (or, with "", stop saying) what was wrong with the input typed for ``key``."""
        if message:
            self.refused[key] = message
        else:
            self.refused.pop(key, None)

    def apply(self, override: str) -> bool:
        """Apply one override (``key=value``, ``+key=value``, ``~key``); say if it took."""
        key = override.lstrip("+~").split("=", 1)[0]
        try:
            candidate = load_config(self.value, [override])
        except ConfigError as exc:
            self.refuse(key, str(exc))
            return False
        # A value its schema refuses (a beam size of -3) is refused as it is typed.
        known = {problem.full_key for problem in self.problems}
        for problem in config_problems(candidate, self.schemas):
            where = problem.full_key or ""
            if where not in known and (where == key or where.startswith(f"{key}.")):
                self.refuse(key, f"{problem}\nthe value stays {self.current(key)!r}")
                return False
        self.refuse(key, "")
        self.take(candidate)
        return True

    def type_in(self, key: str, text: Any, kind: Any) -> bool:
        """Apply what was typed for ``key``, read as ``kind``; say if it took.

        ``kind`` is ``int`` or ``float`` (the number typed, exactly), ``"text"``
        (empty is null), ``"required"`` (empty is refused), ``"yaml"`` (a
        list, say), or ``"value"`` (a checkbox's or a dropdown's value as it is).
        """
        if kind in (int, float):
            try:
                text = parse_number(text, kind)
            except ValueError as exc:
                self.refuse(key, f"{key}: {exc}; the value stays {self.current(key)!r}")
                return False
        elif kind == "yaml":
            try:
                text = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                self.refuse(key, f"{key}: not valid YAML: {exc}")
                return False
        elif text == "" and kind == "required":
            self.refuse(key, f"{key}: a value is required")
            return False
        elif text == "" and kind == "text":
            return self.apply(f"{key}=null")
        return self.apply(f"{key}={encode_value(text)}")

    def add_key(self, key: str, text: str) -> str | None:
        """Add ``key`` with ``text`` parsed as YAML; return what was wrong, or None."""
        key = key.strip()
        try:
            parsed = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as exc:
            return f"{key}: the value is not valid YAML: {exc}"
        if not key:
            return "give the new key's dotted name, e.g. model.dropout"
        try:
            candidate = load_config(self.value, [f"+{key}={encode_value(parsed)}"])
        except ConfigError as exc:
            return str(exc)
        self.take(candidate)
        return None

    def messages(self, fields: Collection[str]) -> tuple[dict[str, str], list[str]]:
        """Return what to say next to each of ``fields``, and what has no field of its own.

        Next to a field: what was typed into it and refused, else its problem
        in the config as it stands; all of them at once, before anything runs.
        """
        by_key = {problem.full_key or "": str(problem) for problem in self.problems}
        beside = {key: self.refused.get(key) or by_key.pop(key, "") for key in fields}
        elsewhere = [message for key, message in by_key.items() if key not in fields]
        elsewhere += [m for k, m in self.refused.items() if k not in fields]
        return beside, elsewhere
