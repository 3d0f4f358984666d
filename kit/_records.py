"""Records as data: the mapping that stores them without pickle and reads them back.

A record is stored as JSON where JSON can say it, with tagged objects for
what it cannot; the raw bytes of ``bytes`` values and numpy arrays and
scalars go to a list of blobs beside the JSON (an Arrow binary column in the
chunk file). Reading back gives the same Python types:

=====================================  =====================================
record value                           stored as
=====================================  =====================================
str, int, float, bool, None            itself
list                                   a JSON array
dict with str keys (no ``__kit__``)    a JSON object
tuple                                  ``{"__kit__": "tuple", "items": [...]}``
any other dict (int keys, ...)         ``{"__kit__": "dict", "items": [[k, v], ...]}``
bytes                                  ``{"__kit__": "bytes", "blob": i}``
numpy array (not of objects)           ``{"__kit__": "ndarray", "dtype", "shape", "blob"}``
numpy scalar (np.float32(1), ...)      ``{"__kit__": "scalar", "dtype", "blob"}``
=====================================  =====================================

Anything else (a class instance, a set, an array of objects) is not data:
:func:`unstorable` names it and where it sits, and the run records that item
as failed unless ``runner.record_format`` is ``pickle``.
"""

from __future__ import annotations

import sys
from typing import Any

TAG = "__kit__"


def _numpy() -> Any:
    # Only a record that holds numpy values can need numpy; it is imported already then.
    return sys.modules.get("numpy")


def is_plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON (stored as a JSON line, no tags).

    Examples
    --------
    >>> is_plain({"hyp": "a b", "scores": [1, 2.5], "ok": True}), is_plain((1, 2))
    (True, False)
    """
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if kind is list:
        return all(is_plain(v) for v in value)
    if kind is dict:
        return all(type(k) is str and k != TAG and is_plain(v) for k, v in value.items())
    return False


def unstorable(value: Any, where: str = "the record") -> str | None:
    """Say which part of ``value`` cannot be stored as data, or None when all can.

    Examples
    --------
    >>> unstorable({"a": [1, {2, 3}]})
    "the record['a'][1] is a set"
    >>> unstorable({"a": (1, b"x")}) is None
    True
    """
    kind = type(value)
    if kind in (str, int, float, bool, bytes) or value is None:
        return None
    if kind in (list, tuple):
        for i, item in enumerate(value):
            found = unstorable(item, f"{where}[{i}]")
            if found:
                return found
        return None
    if kind is dict:
        for key, item in value.items():
            found = unstorable(key, f"a key of {where}") or unstorable(item, f"{where}[{key!r}]")
            if found:
                return found
        return None
    np = _numpy()
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.hasobject:
            return f"{where} is a numpy {type(value).__name__} of Python objects"
        return None
    return f"{where} is a {kind.__module__}.{kind.__qualname__}".replace(" builtins.", " ")


def encode(value: Any, blobs: list[bytes]) -> Any:
    """Turn a storable ``value`` into JSON, appending raw bytes to ``blobs``.

    Examples
    --------
    >>> blobs = []
    >>> encode({"n": (1, 2), "raw": b"hi"}, blobs), blobs
    ({'n': {'__kit__': 'tuple', 'items': [1, 2]}, 'raw': {'__kit__': 'bytes', 'blob': 0}}, [b'hi'])
    """
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is list:
        return [encode(v, blobs) for v in value]
    if kind is tuple:
        return {TAG: "tuple", "items": [encode(v, blobs) for v in value]}
    if kind is dict:
        if all(type(k) is str and k != TAG for k in value):
            return {k: encode(v, blobs) for k, v in value.items()}
        return {
            TAG: "dict",
            "items": [[encode(k, blobs), encode(v, blobs)] for k, v in value.items()],
        }
    if kind is bytes:
        blobs.append(value)
        return {TAG: "bytes", "blob": len(blobs) - 1}
    np = _numpy()
    if np is not None and isinstance(value, np.ndarray):
        blobs.append(np.ascontiguousarray(value).tobytes())
        return {
            TAG: "ndarray",
            "dtype": value.dtype.str,
            "shape": list(value.shape),
            "blob": len(blobs) - 1,
        }
    if np is not None and isinstance(value, np.generic):
        blobs.append(value.tobytes())
        return {TAG: "scalar", "dtype": value.dtype.str, "blob": len(blobs) - 1}
    raise TypeError(unstorable(value) or f"cannot store {value!r}")


def decode(tree: Any, blobs: list[bytes]) -> Any:
    """Inverse of :func:`encode`.

    Examples
    --------
    >>> blobs = []
    >>> decode(encode({1: ("a", b"b")}, blobs), blobs)
    {1: ('a', b'b')}
    """
    kind = type(tree)
    if kind is list:
        return [decode(v, blobs) for v in tree]
    if kind is not dict:
        return tree
    tag = tree.get(TAG)
    if tag is None:
        return {k: decode(v, blobs) for k, v in tree.items()}
    if tag == "tuple":
        return tuple(decode(v, blobs) for v in tree["items"])
    if tag == "dict":
        return {decode(k, blobs): decode(v, blobs) for k, v in tree["items"]}
    if tag == "bytes":
        return bytes(blobs[tree["blob"]])
    import numpy as np

    dtype = np.dtype(tree["dtype"])
    raw = blobs[tree["blob"]]
    if tag == "ndarray":
        return np.frombuffer(raw, dtype=dtype).reshape(tree["shape"]).copy()
    if tag == "scalar":
        return np.frombuffer(raw, dtype=dtype)[0]
    raise ValueError(f"unknown tag {tag!r} in a stored record")
