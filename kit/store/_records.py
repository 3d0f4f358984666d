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
  a matrix or record array             the same with ``"kind": "matrix"`` or ``"recarray"``
  a masked array                       ``{"__kit__": "masked", "data", "mask", "fill"}``
numpy scalar (np.float32(1), ...)      ``{"__kit__": "scalar", "dtype", "blob"}``
=====================================  =====================================

A dtype is stored as numpy's own description (``numpy.lib.format``), so a
structured array keeps its field names and types. Anything else (a class
instance, a set, an array of objects, a list nested more than
:data:`MAX_DEPTH` deep or holding itself) is not data: :func:`unstorable`
names it and where it sits, and the run records that item as failed unless
``runner.record_format`` is ``pickle``.
"""

from __future__ import annotations

import sys
from typing import Any

TAG = "__kit__"
#: How deep lists, tuples and dicts may nest in a record stored as data.
MAX_DEPTH = 100
_ARRAY_KINDS = {"ndarray": None, "matrix": "matrix", "recarray": "recarray"}


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
    return _is_plain(value, MAX_DEPTH)


def _is_plain(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if depth <= 0:
        return False
    if kind is list:
        return all(_is_plain(v, depth - 1) for v in value)
    if kind is dict:
        return all(
            type(k) is str and k != TAG and _is_plain(v, depth - 1) for k, v in value.items()
        )
    return False


def unstorable(value: Any, where: str = "the record") -> str | None:
    """Say which part of ``value`` cannot be stored as data, or None when all can.

    Examples
    --------
    >>> unstorable({"a": [1, {2, 3}]})
    "the record['a'][1] is a set"
    >>> unstorable({"a": (1, b"x")}) is None
    True
    >>> loop = [1]; loop.append(loop)
    >>> unstorable(loop)
    'the record[1][1][1][1][1][1]... nests more than 100 levels deep (does it hold itself?)'
    """
    return _unstorable(value, where, MAX_DEPTH)


def _unstorable(value: Any, where: str, depth: int) -> str | None:
    kind = type(value)
    if kind in (str, int, float, bool, bytes) or value is None:
        return None
    if kind in (list, tuple, dict) and depth <= 0:
        shown = where if len(where) < 40 else where[: where.rindex("[", 0, 30)] + "..."
        return f"{shown} nests more than {MAX_DEPTH} levels deep (does it hold itself?)"
    if kind in (list, tuple):
        for i, item in enumerate(value):
            found = _unstorable(item, f"{where}[{i}]", depth - 1)
            if found:
                return found
        return None
    if kind is dict:
        for key, item in value.items():
            found = _unstorable(key, f"a key of {where}", depth - 1) or _unstorable(
                item, f"{where}[{key!r}]", depth - 1
            )
            if found:
                return found
        return None
    np = _numpy()
    if np is not None and isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.hasobject:
            return f"{where} is a numpy {type(value).__name__} of Python objects"
        if isinstance(value, np.ndarray) and not (
            type(value).__name__ in _ARRAY_KINDS or isinstance(value, np.ma.MaskedArray)
        ):
            return f"{where} is a {type(value).__module__}.{type(value).__qualname__}"
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
    if np is not None and isinstance(value, np.ma.MaskedArray):
        return {
            TAG: "masked",
            "data": encode(np.asarray(value.data), blobs),
            "mask": encode(np.ma.getmaskarray(value), blobs),
            "fill": encode(np.asarray(value.fill_value, dtype=value.dtype)[()], blobs),
        }
    if np is not None and isinstance(value, np.ndarray):
        blobs.append(np.ascontiguousarray(value).tobytes())
        tree = {
            TAG: "ndarray",
            "dtype": _dtype_text(value.dtype),
            "shape": list(value.shape),
            "blob": len(blobs) - 1,
        }
        if type(value) is not np.ndarray:
            tree["kind"] = type(value).__name__
        return tree
    if np is not None and isinstance(value, np.generic):
        blobs.append(value.tobytes())
        return {TAG: "scalar", "dtype": _dtype_text(value.dtype), "blob": len(blobs) - 1}
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

    if tag == "masked":
        data = decode(tree["data"], blobs)
        return np.ma.MaskedArray(
            data, mask=decode(tree["mask"], blobs), fill_value=decode(tree["fill"], blobs)
        )
    dtype = _dtype_from(tree["dtype"])
    raw = blobs[tree["blob"]]
    if tag == "ndarray":
        array = np.frombuffer(raw, dtype=dtype).reshape(tree["shape"]).copy()
        kind = tree.get("kind")
        if kind == "matrix":
            return np.asmatrix(array)
        if kind == "recarray":
            return array.view(np.recarray)
        return array
    if tag == "scalar":
        return np.frombuffer(raw, dtype=dtype)[0]
    raise ValueError(f"unknown tag {tag!r} in a stored record")


def _dtype_text(dtype: Any) -> Any:
    """Describe ``dtype`` as JSON: ``"<f4"``, or numpy's field list for a structured one."""
    from numpy.lib.format import dtype_to_descr

    return dtype_to_descr(dtype)


def _dtype_from(described: Any) -> Any:
    """Inverse of :func:`_dtype_text` (JSON turned numpy's tuples into lists)."""
    from numpy.lib.format import descr_to_dtype

    def fields(value: Any) -> Any:
        if isinstance(value, str):
            return value
        out: list[tuple[Any, ...]] = []
        for field in value:
            name = field[0] if isinstance(field[0], str) else tuple(field[0])
            if len(field) == 3:
                out.append((name, fields(field[1]), tuple(field[2])))
            else:
                out.append((name, fields(field[1])))
        return out

    return descr_to_dtype(fields(described))
