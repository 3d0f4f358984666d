"""The one exception type for bad configuration, and its message layout."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from kit._base.errors import ConfigError as ConfigError


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """Return the candidate most like ``word``, if any is close enough."""
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def error(
    problem: str,
    *,
    full_key: str | None = None,
    source: str | None = None,
    value: Any = None,
    show_value: bool = False,
    expected: str | None = None,
    facts: Mapping[str, Any] | None = None,
    fix: str | None = None,
    kind: type[ConfigError] = ConfigError,
) -> ConfigError:
    """Build a ConfigError whose message lists its facts one per line.

    The layout mirrors OmegaConf's own errors: a one-line summary, then
    indented ``name: fact`` lines, so the message reads well in a terminal,
    a notebook traceback and a widget tooltip alike. ``facts`` adds lines of
    its own (``{"only here": ...}``) before the fix. ``kind`` is a subclass
    to raise where a caller also expects another type (ESPnet3's configs
    raise RuntimeError). Every ConfigError Kit raises is built here.

    Examples
    --------
    >>> print(error("is not a number", full_key="a.b", value="x", show_value=True,
    ...             facts={"file line": 3}, fix="give a number"))
    a.b: is not a number
        value: 'x'
        full_key: a.b
        file line: 3
        fix: give a number
    """
    head = f"{full_key}: {problem}" if full_key else problem
    lines = [head]
    if show_value:
        lines.append(f"    value: {value!r}")
    if expected:
        lines.append(f"    expected: {expected}")
    if full_key:
        lines.append(f"    full_key: {full_key}")
    if source and source.startswith("override "):
        # Provenance records overrides as "override '<line>'": not a file.
        lines.append(f"    from: {source}")
        source = None
    elif source:
        lines.append(f"    file: {source}")
    lines += [f"    {name}: {fact}" for name, fact in (facts or {}).items()]
    if fix:
        lines.append(f"    fix: {fix}")
    return kind("\n".join(lines), full_key=full_key, source=source)


def import_class(path: str, key: str, base: type) -> type:
    """Import the class a config's ``_target_`` names; a subclass of ``base``, or a ConfigError.

    >>> import_class("collections.OrderedDict", "provider._target_", dict).__name__
    'OrderedDict'
    """
    from hydra.utils import get_class

    try:
        cls = get_class(path)
    except Exception as exc:
        cause = exc.__cause__ or exc
        raise error(
            f"cannot import {path!r} ({type(cause).__name__}: {cause})",
            full_key=key,
            fix="give the import path of the class (package.module.Class), and make its "
            "package importable (install it, or run from its folder / set PYTHONPATH)",
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise error(f"{path!r} is not a subclass of kit.{base.__name__}", full_key=key)
    return cls


def missing(key: str, example: str) -> ConfigError:
    """Return the error for a section ``kit run`` needs and the config lacks (``example``: one)."""
    return error("`kit run` needs this section", full_key=key, fix=f"add it, e.g. {example}")
