"""What version of the code and keywords made a run's records, so a resume never mixes two.

A resume reuses stored records only if the same code would make them again:
the manifest keeps a digest of ``forward``'s code (and of ``batch_by``'s), and
one per keyword passed to ``run(...)``. The code digest is taken from the
compiled code, not the source, so it is the same in a notebook and in a
detached driver that received the function by value; a blank line or a
moved definition does not change it, an edited body or docstring does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import types
from collections.abc import Callable, Mapping
from typing import Any

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _feed_code(code: types.CodeType, digest: Any) -> None:
    digest.update(code.co_code)
    digest.update(repr((code.co_names, code.co_varnames, code.co_freevars)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(const, digest)
        elif isinstance(const, frozenset):
            # `x in {"a", "b"}`: a set's order changes with each process's hash seed.
            digest.update(repr(sorted(map(repr, const))).encode())
        else:
            digest.update(repr(const).encode())


def code_digest(fn: Callable[..., Any] | None) -> str | None:
    """Return a short digest of ``fn``'s compiled code (and of a partial's arguments).

    Examples
    --------
    >>> def a(x): return x + 1
    >>> def b(x): return x + 1
    >>> def c(x): return x + 2
    >>> code_digest(a) == code_digest(b), code_digest(a) == code_digest(c)
    (True, False)
    """
    if fn is None:
        return None
    digest = hashlib.sha256()
    while True:
        if isinstance(fn, functools.partial):
            digest.update(json.dumps(keyword_digests(dict(enumerate(fn.args)))).encode())
            digest.update(json.dumps(keyword_digests(fn.keywords), sort_keys=True).encode())
            fn = fn.func
        elif isinstance(fn, (staticmethod, classmethod, types.MethodType)):
            fn = fn.__func__
        else:
            break
    code = getattr(fn, "__code__", None)
    if code is None:
        # A callable object: its class's __call__ is the code that runs.
        code = getattr(type(fn).__call__, "__code__", None)
    if code is not None:
        _feed_code(code, digest)
        defaults = (getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None))
        digest.update(_value_text(defaults).encode())
    else:
        digest.update(_value_text(fn).encode())
    return digest.hexdigest()[:16]


def _value_text(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        # Not JSON: its repr, without the memory address that differs every run.
        return type(value).__qualname__ + ":" + _ADDRESS.sub("", repr(value))


def keyword_digests(keywords: Mapping[Any, Any]) -> dict[str, str]:
    """Return a short digest of each keyword's value.

    Examples
    --------
    >>> keyword_digests({"scale": 2}) == keyword_digests({"scale": 2})
    True
    >>> keyword_digests({"scale": 2}) == keyword_digests({"scale": 3})
    False
    """
    return {
        str(name): hashlib.sha256(_value_text(value).encode()).hexdigest()[:16]
        for name, value in keywords.items()
    }


def version_difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Say how the code version in manifest ``new`` differs from ``old``'s, or None.

    A manifest written before versions were recorded has none: nothing to compare.

    Examples
    --------
    >>> old = {"forward_code": "a1", "keywords": {"scale": "x"}}
    >>> version_difference(old, {"forward_code": "a1", "keywords": {"scale": "y", "n": "z"}})
    'the keywords of run(...) differ (n, scale)'
    >>> version_difference(old, {"forward_code": "b2", "keywords": {"scale": "x"}})
    "forward's code differs"
    """
    if "forward_code" not in old:
        return None
    if old["forward_code"] != new["forward_code"]:
        return "forward's code differs"
    if old.get("batch_by_code") != new.get("batch_by_code"):
        return "batch_by's code differs"
    before, now = old.get("keywords") or {}, new.get("keywords") or {}
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if changed:
        return f"the keywords of run(...) differ ({', '.join(changed)})"
    return None
