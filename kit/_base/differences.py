"""Where two records of one item differ: field by field, text exactly, numbers to a tolerance."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Numbers apart by at most this (relative) differ by precision only: float noise.
PRECISION = 1e-3
#: Characters of text either side of where two texts part, in a difference's ``where``.
CONTEXT = 20


@dataclass(frozen=True)
class Difference:
    """One field of one item that two ways of running it disagree on.

    Attributes
    ----------
    index, position
        The item (its index, and its place in the check's sample).
    ways
        The two ways compared, e.g. ``("reference", "worker")``.
    field
        The field's path in the record (``text``, ``metrics.wer``,
        ``scores[2]``; ``""`` for the record itself, ``error`` for a failure).
    a, b
        The two values (``b`` of the second way).
    where
        Where they differ: the first differing character with some context,
        or the relative difference of two numbers.
    precision
        True when both are numbers within a relative :data:`PRECISION`.

    Examples
    --------
    >>> [str(d) for d in differences(0, 0, {"text": "a cat"}, {"text": "a hat"}, ("r", "w"))]
    ["item 0, text: 'a cat' (r) vs 'a hat' (w): from character 2: 'a cat' vs 'a hat'"]
    """

    index: int | str  # an item's index (kit.result.Index, which stands a floor above)
    position: int
    ways: tuple[str, str]
    field: str
    a: Any
    b: Any
    where: str
    precision: bool = False

    def __str__(self) -> str:
        name = self.field or "record"
        return (
            f"item {self.index}, {name}: {short(self.a)} ({self.ways[0]}) vs "
            f"{short(self.b)} ({self.ways[1]}): {self.where}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the difference as plain data (values as their ``repr`` when not JSON's own)."""
        return {
            "index": self.index,
            "position": self.position,
            "ways": list(self.ways),
            "field": self.field,
            "a": _plain(self.a),
            "b": _plain(self.b),
            "where": self.where,
            "precision": self.precision,
        }


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return repr(value)[:200]


def short(value: Any) -> str:
    """Return ``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(path, value)`` for every leaf of a record: mappings and lists are opened.

    Examples
    --------
    >>> dict(leaves({"a": 1, "b": {"c": [2, 3]}}))
    {'a': 1, 'b.c[0]': 2, 'b.c[1]': 3}
    """
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
        if not value:
            yield path, value
    elif isinstance(value, (list, tuple)):
        for pos, item in enumerate(value):
            yield from leaves(item, f"{path}[{pos}]")
        if not value:
            yield path, value
    else:
        yield path, _scalar(value)


def _scalar(value: Any) -> Any:
    """Numpy scalars and arrays as Python numbers and lists, so they compare as data."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and type(value).__module__ == "numpy":
        return tolist()
    return value


def _ignored(path: str, ignore: Sequence[str]) -> bool:
    return any(path == name or path.startswith((f"{name}.", f"{name}[")) for name in ignore if name)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _relative(a: float, b: float) -> float:
    if a == b:
        return 0.0
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def _where_text(a: str, b: str) -> str:
    pairs = enumerate(zip(a, b, strict=False))
    at = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
    start = max(0, at - 3)
    return f"from character {at}: {a[start : at + CONTEXT]!r} vs {b[start : at + CONTEXT]!r}"


def differences(
    index: int | str,
    position: int,
    a: Any,
    b: Any,
    ways: tuple[str, str],
    *,
    rtol: float = 0.0,
    ignore: Sequence[str] = (),
) -> list[Difference]:
    """Return where records ``a`` and ``b`` of one item differ, field by field.

    Text and everything but numbers compare exactly; numbers (ints and
    floats alike) within a relative ``rtol`` are equal. Fields under a path
    in ``ignore`` (``decode_seconds``, ``metrics.rtf``) are not compared.

    Examples
    --------
    >>> found = differences(3, 0, {"wer": 0.25, "t": 1.0}, {"wer": 0.2500001, "t": 9.0},
    ...                     ("reference", "worker"), ignore=["t"])
    >>> print(found[0]); found[0].precision
    item 3, wer: 0.25 (reference) vs 0.2500001 (worker): relative difference 4.0e-07
    True
    >>> differences(3, 0, {"wer": 0.25}, {"wer": 0.2500001}, ("a", "b"), rtol=1e-6)
    []
    """
    left = dict(leaves(a))
    right = dict(leaves(b))
    found = []
    for path in sorted(set(left) | set(right), key=lambda p: (p not in left, p)):
        if _ignored(path, ignore):
            continue
        if path not in right or path not in left:
            missing = ways[1] if path not in right else ways[0]
            found.append(
                Difference(
                    index,
                    position,
                    ways,
                    path,
                    left.get(path),
                    right.get(path),
                    f"missing in {missing}'s record",
                )
            )
            continue
        x, y = left[path], right[path]
        if _number(x) and _number(y):
            if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
                continue
            gap = _relative(float(x), float(y))
            if gap <= rtol or x == y:
                continue
            where = f"relative difference {gap:.1e}"
            # Rounding shows in floats; two ints that differ at all differ for a reason.
            rounding = gap <= PRECISION and (isinstance(x, float) or isinstance(y, float))
            found.append(Difference(index, position, ways, path, x, y, where, rounding))
        elif type(x) is not type(y) or x != y:
            if isinstance(x, str) and isinstance(y, str):
                where = _where_text(x, y)
            elif type(x) is not type(y):
                where = f"{type(x).__name__} vs {type(y).__name__}"
            else:
                where = "not equal"
            found.append(Difference(index, position, ways, path, x, y, where))
    return found
