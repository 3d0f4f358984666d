"""Hydra-style ``key=value`` overrides: apply them, and compute them from a diff.

Parsing is hydra-core's own override parser, so the grammar (quoting, lists,
dicts, ``+``/``++``/``~``) is exactly Hydra's; only applying them is ours, so
that every failure becomes a :class:`ConfigError` that names the override.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from kit.config._compose import Provenance, all_keys
from kit.config._errors import ConfigError, closest, error
from kit.config._schema import SECTIONS

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_FIX_FORMS = (
    "write `key=value` to change, `+key=value` to add, "
    "`++key=value` to add or change, `~key` to delete"
)


def _parser() -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def has_key(cfg: DictConfig, dotted: str) -> bool:
    """Tell whether ``dotted`` names an existing key (a ``null`` or ``???`` value counts).

    A number names an element of a list, as in Hydra (``x.0``, ``x.0.a``).

    Examples
    --------
    >>> cfg = OmegaConf.create({"x": [1, {"a": 2}], "y": "???"})
    >>> has_key(cfg, "x.1.a"), has_key(cfg, "x.2"), has_key(cfg, "y")
    (True, False, True)
    """
    node: Any = cfg
    for part in dotted.split("."):
        if not isinstance(node, (DictConfig, ListConfig)) or node._is_none() or node._is_missing():
            return False
        if isinstance(node, ListConfig):
            if not part.isdigit() or int(part) >= len(node):
                return False
            node = node._get_node(int(part))
            continue
        # `in` on a DictConfig is False for a ``???`` value; keys() lists it.
        if part not in node.keys():  # noqa: SIM118
            return False
        node = node._get_node(part)
    return True


def _parent_and_leaf(cfg: DictConfig, key: str) -> tuple[Any, str | int]:
    """Return the container holding ``key`` and the key within it (an int in a list)."""
    parent, _, last = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    leaf: str | int = int(last) if isinstance(node, ListConfig) and last.isdigit() else last
    return node, leaf


def _spelled(value: Any) -> str:
    """Return ``value`` as an override writes it (``null`` for None)."""
    return "null" if value is None else repr(value)


def _current(cfg: DictConfig, key: str) -> Any:
    """Return the value at ``key`` as an override spells it, unresolved (``???`` if missing).

    Examples
    --------
    >>> cfg = OmegaConf.create({"a": "${b}", "b": 1, "c": "???", "d": {"e": None}})
    >>> [_current(cfg, k) for k in ("a", "c", "d", "d.e")]
    ['${b}', '???', {'e': None}, None]
    """
    child = _child(cfg, key)
    if isinstance(child, (DictConfig, ListConfig)):
        return OmegaConf.to_container(child, resolve=False)
    return child._value()


def apply_overrides(cfg: DictConfig, overrides: Sequence[str], provenance: Provenance) -> None:
    """Apply ``overrides`` to ``cfg`` in place, in order."""
    if isinstance(overrides, str):
        raise TypeError("overrides must be a list of strings, e.g. ['a.b=1'], not one string")
    parser = _parser()
    from hydra.errors import OverrideParseException

    for line in overrides:
        try:
            (override,) = parser.parse_overrides([line])
            _apply_one(cfg, override, line, provenance)
        except OverrideParseException as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
            raise error(f"cannot parse override {line!r}: {detail}", fix=_FIX_FORMS) from None
        except RecursionError:
            shown = line if len(line) <= 60 else line[:50] + "..."
            raise error(
                f"override {shown!r} nests too deep to read",
                fix="give a flatter value, or put it in a YAML file",
            ) from None


def _apply_one(cfg: DictConfig, override: Any, line: str, provenance: Provenance) -> None:
    key: str = override.key_or_group
    if not key.strip("."):
        raise error(
            f"override {line!r} has no key before '='",
            fix="write key=value, e.g. `model.hidden=64`",
        )
    if override.is_sweep_override():
        raise error(
            f"override {line!r} is a sweep; sweeps are not supported here",
            full_key=key,
            fix="run the trials with kit.sweep(config, overrides) (each value a trial), or "
            "give one value per key; quote a value that contains commas, e.g. key='a,b'",
        )
    if override.package is not None:
        raise error(
            f"override {line!r} names a package (@...); packages are not supported here",
            full_key=key,
            fix="use the plain dotted key, e.g. `db.host=...`",
        )
    exists = has_key(cfg, key)
    value = override.value()
    where = f"override {line!r}"
    with open_dict(cfg):
        if override.is_delete():
            if not exists:
                raise _no_such_key(cfg, key, line, "nothing to delete: check the key name")
            # `~key=value` deletes only a key holding that value (null and ??? too).
            current = _current(cfg, key) if override.value_type is not None else None
            if override.value_type is not None and current != value:
                raise error(
                    f"{where} expects the value {_spelled(value)}, but it is {_spelled(current)}",
                    full_key=key,
                    fix=f"write `~{key}` to delete whatever the value is",
                )
            node, leaf = _parent_and_leaf(cfg, key)
            del node[leaf]
            for known in [k for k in provenance if k == key or k.startswith(key + ".")]:
                del provenance[known]
            return
        if override.is_add() and exists:
            raise error(
                f"{where} adds a key that already exists",
                full_key=key,
                fix=f"write `{key}=...` to change it, or `++{key}=...` to add or change",
            )
        adding = override.is_add() or override.is_force_add()
        if not adding and not exists and not _kit_field(key):
            raise _no_such_key(cfg, key, line, f"to add it, write `+{line}`")
        # A mapping merges into an existing section and a list into an existing list
        # (its elements then take the list's type: `users=[{name: bond}]` on a
        # List[User]), as in Hydra; anything else replaces the old value.
        # A typed list or mapping left `???` or null (List[User] = MISSING) takes
        # the value by a merge too, so its elements get their type, as in Hydra.
        merge = exists and (
            (isinstance(value, dict) and _is_container(cfg, key, DictConfig))
            or (isinstance(value, list) and _is_container(cfg, key, ListConfig))
        )
        if merge and isinstance(value, dict) and not adding and _is_section(cfg, key):
            # `s={typo: 2}` merges into s: each key it names must exist, as `s.typo=2`'s.
            for inner in _new_keys(cfg, key, value):
                raise _no_such_key(cfg, inner, line, f"to add it, write `++{line}`")
        try:
            OmegaConf.update(cfg, key, value, merge=merge, force_add=True)
        except Exception as exc:
            raise error(f"{where} could not be applied: {exc}", full_key=key) from None
    provenance[key] = where


def _new_keys(cfg: DictConfig, key: str, value: dict[str, Any]) -> list[str]:
    """Return the dotted keys a mapping merged into section ``key`` would add.

    Examples
    --------
    >>> cfg = OmegaConf.create({"s": {"a": 1, "b": {"c": 2}}})
    >>> _new_keys(cfg, "s", {"a": 5, "b": {"c": 3, "d": 4}, "typo": 2})
    ['s.b.d', 's.typo']
    """
    found = []
    for name, inner in value.items():
        path = f"{key}.{name}"
        if not has_key(cfg, path) and not _kit_field(path):
            found.append(path)
        elif isinstance(inner, dict) and _is_section(cfg, path):
            found += _new_keys(cfg, path, inner)
    return found


def _kit_fields(section: str) -> list[str]:
    """Return the keys of ``section`` if Kit owns it (``tracking.mlflow``...): they exist.

    Examples
    --------
    >>> _kit_fields("tracking")[:2], _kit_fields("model")
    (['tracking.tensorboard', 'tracking.mlflow'], [])
    """
    schema = SECTIONS.get(section)
    return [f"{section}.{f.name}" for f in dataclasses.fields(schema)] if schema else []


def _kit_field(key: str) -> bool:
    return key in _kit_fields(key.partition(".")[0])


def _child(cfg: DictConfig, key: str) -> Any:
    """Return the node at ``key`` (None where its parent holds no nodes)."""
    node, leaf = _parent_and_leaf(cfg, key)
    container = isinstance(node, (DictConfig, ListConfig))
    return node._get_node(leaf) if container else None  # leaf: an int in a list


def _is_section(cfg: DictConfig, key: str) -> bool:
    child = _child(cfg, key)
    return isinstance(child, DictConfig) and not child._is_none() and not child._is_missing()


def _is_container(cfg: DictConfig, key: str, kind: type) -> bool:
    """Whether ``key`` holds a ``kind`` node: set, or a typed one left ``???`` or null."""
    return isinstance(_child(cfg, key), kind)


def _no_such_key(cfg: DictConfig, key: str, line: str, fix: str) -> ConfigError:
    guess = closest(key, [*all_keys(cfg), *_kit_fields(key.partition(".")[0])])
    problem = f"override {line!r} names a key that does not exist"
    if guess:
        problem += f"; did you mean '{guess}'?"
        fix = f"{fix}; or write `{guess}=...` to change the existing key"
    return error(problem, full_key=key, fix=fix)


# ---------------------------------------------------------------- diffing


def to_override_list(base: DictConfig, edited: DictConfig) -> list[str]:
    """Return the overrides that turn ``base`` into ``edited`` (unresolved)."""
    left = OmegaConf.to_container(base, resolve=False)
    right = OmegaConf.to_container(edited, resolve=False)
    assert isinstance(left, dict) and isinstance(right, dict)
    out: list[str] = []
    _diff(left, right, "", out)
    return out


def _diff(left: Mapping[Any, Any], right: Mapping[Any, Any], prefix: str, out: list[str]) -> None:
    for key in left:
        if key not in right:
            out.append(f"~{_path(prefix, key)}")
    for key, new in right.items():
        path = _path(prefix, key)
        if key not in left:
            out.append(f"+{path}={encode_value(new)}")
            continue
        old = left[key]
        if isinstance(old, dict) and isinstance(new, dict):
            _diff(old, new, path, out)
        elif not same(old, new):
            out.append(f"{path}={encode_value(new)}")


def _path(prefix: str, key: Any) -> str:
    _check_key(key)
    return f"{prefix}.{key!s}" if prefix else str(key)


def _check_key(key: Any) -> None:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise error(
            f"the key {key!r} cannot be written as an override",
            fix="use keys made of letters, digits, '_' and '-', starting with a letter or '_'",
        )


def same(a: Any, b: Any) -> bool:
    """Compare values strictly: ``1``, ``1.0`` and ``True`` all differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def encode_value(value: Any) -> str:
    """Write ``value`` in Hydra's override grammar so that it parses back unchanged.

    Examples
    --------
    >>> print(encode_value([1, "two", None, {"x": 1.5}, "two words"]))
    [1,two,null,{x:1.5},'two words']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (list, tuple, ListConfig)):
        return "[" + ",".join(encode_value(v) for v in value) + "]"
    if isinstance(value, (dict, DictConfig)):
        for key in value:
            _check_key(key)
        return "{" + ",".join(f"{k!s}:{encode_value(v)}" for k, v in value.items()) + "}"
    raise error(
        f"the value {value!r} of type {type(value).__name__} cannot be written as an override",
        fix="use numbers, strings, booleans, null, lists and mappings",
    )


# Words Hydra reads as something other than a string when left unquoted.
_KEYWORDS = {"true", "false", "null", "inf", "nan"}
_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-./]*$")


def _quote(text: str) -> str:
    if _BARE.fullmatch(text) and text.lower() not in _KEYWORDS:
        return text  # plain words read better bare: `parallel.env=slurm`
    # Hydra treats a backslash as an escape only before a quote or before
    # other backslashes that precede a quote, so double exactly those runs.
    out = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", text)
    out = re.sub(r"(\\+)$", lambda m: m.group(1) * 2, out)
    return f"'{out}'"


def iter_lines(overrides: Iterable[str]) -> list[str]:
    """Return overrides as a list, refusing a bare string."""
    if isinstance(overrides, str):
        raise TypeError("overrides must be a list of strings, e.g. ['a.b=1'], not one string")
    return list(overrides)
