"""Read YAML files and compose their ``defaults:`` lists.

Every leaf key remembers the file it last came from, so that a later error
can name the file a bad value was written in.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from kit._base.errors import KitError
from kit.config._errors import error

#: Maps a dotted key to where its value came from (a file path or an override).
Provenance = dict[str, str]

SELF = "_self_"


def source_of(provenance: Provenance, full_key: str) -> str | None:
    """Return where ``full_key`` (or its nearest recorded parent) came from."""
    key = full_key
    while True:
        if key in provenance:
            return provenance[key]
        if "." not in key:
            return None
        key = key.rsplit(".", 1)[0]


def leaf_keys(node: Any, prefix: str = "") -> Iterator[str]:
    """Yield the dotted keys of ``node``'s leaves; lists count as leaves."""
    if isinstance(node, DictConfig):
        for key in node.keys():  # noqa: SIM118
            child = node._get_node(key)
            full = f"{prefix}.{key!s}" if prefix else str(key)
            if isinstance(child, DictConfig) and not child._is_missing() and len(child) > 0:
                yield from leaf_keys(child, full)
            else:
                yield full


def all_keys(node: Any, prefix: str = "") -> Iterator[str]:
    """Yield every dotted key of ``node``, inner sections included."""
    if isinstance(node, DictConfig) and not node._is_missing() and not node._is_none():
        for key in node.keys():  # noqa: SIM118
            full = f"{prefix}.{key!s}" if prefix else str(key)
            yield full
            yield from all_keys(node._get_node(key), full)


#: A config larger than this is refused: configs are small, and a huge file would hang.
MAX_CONFIG_BYTES = 1 << 20
#: Values a config may expand to through YAML aliases (``&a``/``*a``): a few
#: hundred bytes of nested aliases can otherwise expand to billions.
MAX_CONFIG_VALUES = 100_000


def _read_text(path: Path) -> str:
    """Read a config file's text, with a clear error for anything but a small UTF-8 file."""
    try:
        info = path.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}", source=str(path)) from None
    if info is None or not path.exists():
        hint = "check the path (it is relative to the current directory"
        hint += ", or to the including file in a defaults list)"
        raise error(f"config file not found: {path}", source=str(path), fix=hint)
    if path.is_dir():
        raise error(
            f"{path} is a directory, not a YAML file", source=str(path), fix="name a .yaml file"
        )
    if not path.is_file():
        raise error(
            f"{path} is not a regular file (a pipe or a device)",
            source=str(path),
            fix="name a .yaml file",
        )
    if info.st_size > MAX_CONFIG_BYTES:
        raise error(
            f"{path} has {info.st_size:,} bytes; a config may have at most {MAX_CONFIG_BYTES:,}",
            source=str(path),
            fix="keep data out of the config: put it in a file the config names",
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}", source=str(path)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(
            f"{path} is not UTF-8 text (byte {exc.start}, line {line})",
            source=str(path),
            fix="save the file as UTF-8",
        ) from None


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    """Count the values ``node`` stands for once its aliases are expanded (stops past limit)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = limit + 1  # an alias back into itself expands forever
    total = 1
    if isinstance(node, yaml.MappingNode):
        children: list[yaml.Node] = [n for pair in node.value for n in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        children = []
    for child in children:
        total += _expanded_size(child, memo, limit)
        if total > limit:
            break
    memo[key] = total
    return total


def load_yaml(path: Path) -> DictConfig:
    """Load one YAML file as a DictConfig, with file and line on syntax errors."""
    text = _read_text(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if isinstance(root, yaml.ScalarNode) and root.value.strip():
            raise error(
                f"the top level of {path} must be a mapping (key: value), not a single value",
                source=str(path),
                fix="write key: value lines",
            )
        if root is not None and _expanded_size(root, {}, MAX_CONFIG_VALUES) > MAX_CONFIG_VALUES:
            raise error(
                f"{path} expands to more than {MAX_CONFIG_VALUES:,} values through YAML "
                "aliases (&name / *name)",
                source=str(path),
                fix="write the values out, or use ${...} interpolation instead of aliases",
            )
        cfg = OmegaConf.load(io.StringIO(text))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise error(
            f"YAML syntax error in {where}: {problem}",
            source=str(path),
            fix="correct the YAML at that line (indentation, a missing ':' or quote)",
        ) from None
    except yaml.YAMLError as exc:
        raise error(f"YAML error in {path}: {exc}", source=str(path)) from None
    except KitError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # OmegaConf refusing what YAML allows: a list as a key, a value it cannot hold.
        raise error(
            f"{path} is valid YAML but not a config: {exc}".splitlines()[0],
            source=str(path),
            fix="use plain keys (names) and values (strings, numbers, lists, mappings)",
        ) from None
    if cfg is None or (isinstance(cfg, DictConfig) and cfg._is_none()):
        return OmegaConf.create({})
    if not isinstance(cfg, DictConfig):
        raise error(
            f"the top level of {path} must be a mapping (key: value), not a list",
            source=str(path),
            fix="put the list under a key",
        )
    return cfg


def compose_file(path: Path, provenance: Provenance, _stack: tuple[Path, ...] = ()) -> DictConfig:
    """Load ``path`` and merge its ``defaults:`` list into it.

    Entries are merged in order, later ones winning; the file's own content
    comes last unless ``_self_`` stands elsewhere in the list. An entry is a
    path relative to the file (``.yaml`` may be left off) or a one-key
    mapping ``group: name`` that loads ``group/name.yaml`` under key ``group``.
    """
    try:
        resolved = path.resolve()
        dangling = path.is_symlink() and not resolved.exists()
    except OSError as exc:  # a name too long, a folder without permission
        raise error(f"cannot read {path}: {exc.strerror or exc}", source=str(path)) from None
    except RuntimeError as exc:  # a symlink loop
        raise error(f"cannot read {path}: {exc}", source=str(path)) from None
    if dangling:
        raise error(
            f"config file not found: {path} is a symlink to {os.readlink(path)}, which does "
            "not exist",
            source=str(path),
            fix="point the link at a YAML file, or name the file itself",
        )
    path = resolved
    if path in _stack:
        chain = " -> ".join(str(p) for p in (*_stack, path))
        raise error(
            f"defaults list includes itself: {chain}",
            source=str(path),
            fix="remove the cycle",
        )
    own = load_yaml(path)
    defaults = own.pop("defaults", None) if "defaults" in own else None
    entries = _entries(defaults, path)
    if SELF not in entries:
        entries.append(SELF)
    merged = OmegaConf.create({})
    for entry in entries:
        if entry == SELF:
            part: DictConfig = own
            for key in leaf_keys(own):
                provenance[key] = str(path)
        else:
            group, child_path = entry
            child_prov: Provenance = {}
            part = compose_file(child_path, child_prov, (*_stack, path))
            if group:
                part = OmegaConf.create({group: part})
                child_prov = {f"{group}.{k}": v for k, v in child_prov.items()}
            provenance.update(child_prov)
        merged = OmegaConf.merge(merged, part)  # type: ignore[assignment]
    return merged


def _entries(defaults: Any, path: Path) -> list[Any]:
    if defaults is None:
        return []
    if not isinstance(defaults, ListConfig):
        raise error(
            "must be a list of files to compose",
            full_key="defaults",
            source=str(path),
            fix="write `defaults:` followed by `- other.yaml` lines",
        )
    entries: list[Any] = []
    for i, item in enumerate(defaults):
        where = f"defaults[{i}]"
        if item == SELF:
            entries.append(SELF)
        elif isinstance(item, str):
            entries.append((None, _resolve_entry(path.parent / item, path, where)))
        elif isinstance(item, DictConfig) and len(item) == 1:
            group, name = next(iter(item.items()))
            if str(group).startswith("override ") or not isinstance(name, str):
                raise _bad_entry(item, path, where)
            target = _resolve_entry(path.parent / str(group) / name, path, where)
            entries.append((str(group), target))
        else:
            raise _bad_entry(item, path, where)
    return entries


def _resolve_entry(candidate: Path, including: Path, where: str) -> Path:
    for option in (candidate, candidate.with_name(candidate.name + ".yaml")):
        if option.is_file():
            return option
    raise error(
        f"cannot find the file {candidate} named in the defaults list",
        full_key=where,
        source=str(including),
        fix="give a path relative to the including file (the .yaml ending may be left off)",
    )


def _bad_entry(item: Any, path: Path, where: str) -> Exception:
    return error(
        "cannot read this defaults entry",
        full_key=where,
        source=str(path),
        value=OmegaConf.to_container(item) if OmegaConf.is_config(item) else item,
        show_value=True,
        expected="a relative file path, `group: name`, or _self_",
        fix="write entries as `- other.yaml` or `- group: name`",
    )
