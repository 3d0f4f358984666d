"""Parity: do the ways of running an item agree, and if not, the likely cause."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit._base.differences import Difference, differences
from kit.result import Index, RunResult

#: The causes a check names, in the order they are considered.
CAUSES = (
    "nondeterminism",
    "versions",
    "config",
    "precision",
    "threads",
    "environment",
    "batching",
)


@dataclass(frozen=True)
class Parity:
    """Whether the check's ways of running its items gave the same records.

    Attributes
    ----------
    ok
        True when no compared field differs.
    cause
        The likely cause (one of :data:`CAUSES`), or None when ``ok``.
    why
        One line on what shows that cause (the packages, keys or thread
        counts that differ; what was compared).
    differences
        Every differing field: item, the two ways, the two values, where.
    compared
        Items compared for each pair of ways (``reference vs worker``, ...).
    """

    ok: bool
    cause: str | None
    why: str
    differences: tuple[Difference, ...] = ()
    compared: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return it as plain data (``--json``'s ``parity``)."""
        return {
            "ok": self.ok,
            "cause": self.cause,
            "why": self.why,
            "differences": [d.to_dict() for d in self.differences],
            "compared": self.compared,
        }


class _Failed(str):
    """An item's failure (``type: message``), told apart from any record."""


def _value(result: RunResult, position: int) -> Any:
    """Return the item's record, or its failure."""
    for error in result.errors:
        if error.position == position:
            return _Failed(f"{error.type}: {error.message}")
    return result.records[position]


def _as_failure(value: Any) -> dict[str, str | None]:
    return {"error": str(value) if isinstance(value, _Failed) else None}


def compare(
    a: RunResult,
    b: RunResult,
    ways: tuple[str, str],
    *,
    rtol: float = 0.0,
    ignore: Sequence[str] = (),
) -> tuple[list[Difference], int]:
    """Return the differences of two runs over the same items, and how many items were compared.

    Items neither run reached (cancelled) are not compared.
    """
    found: list[Difference] = []
    compared = 0
    ran_a = {e.position for e in a.errors} | {p for p, r in enumerate(a.records) if r is not None}
    ran_b = {e.position for e in b.errors} | {p for p, r in enumerate(b.records) if r is not None}
    for position, index in enumerate(a.indices):
        if position not in ran_a or position not in ran_b:
            continue
        compared += 1
        x, y = _value(a, position), _value(b, position)
        if isinstance(x, _Failed) or isinstance(y, _Failed):
            # An item that failed one way differs in whether it failed, not field by field.
            x, y = _as_failure(x), _as_failure(y)
        found += differences(index, position, x, y, ways, rtol=rtol, ignore=ignore)
    return found, compared


def _items(found: Sequence[Difference]) -> str:
    items: list[Index] = []
    for difference in found:
        if difference.index not in items:
            items.append(difference.index)
    shown = ", ".join(map(str, items[:5])) + (", ..." if len(items) > 5 else "")
    return f"{len(items)} item{'s' if len(items) != 1 else ''} ({shown})"


def judge(
    again: Sequence[Difference],
    worker: Sequence[Difference],
    batched: Sequence[Difference],
    seen: Mapping[str, Sequence[str]],
    compared: dict[str, int],
) -> Parity:
    """Name the likely cause of the differences found, from where and how they show.

    ``again``: the reference against itself; ``worker``: the reference
    against a worker, one item at a time; ``batched``: that worker run
    against the batched one. ``seen`` is what differs between what the
    driver and the workers see, by cause (``versions``, ``config``,
    ``threads``, ``environment``: :func:`kit.check._sight.versus`).

    Examples
    --------
    >>> from kit._base.differences import Difference
    >>> d = Difference(0, 0, ("reference", "worker"), "score", 1.0, 1.0000001, "", True)
    >>> seen = {"versions": [], "config": [], "threads": ["2 (driver) vs 1 (w)"], "environment": []}
    >>> judge([], [d], [], seen, {}).cause
    'precision'
    >>> judge([], [], [], seen, {}).ok
    True
    """
    found = (*again, *worker, *batched)
    if not found:
        return Parity(True, None, "the same records every way", (), compared)
    if again:
        return Parity(
            False,
            "nondeterminism",
            f"the reference differs from itself on {_items(again)}: the same item in the same "
            "process gives other records (a random draw without a seed, a clock, a set's order)",
            found,
            compared,
        )
    if worker:
        where = f"the workers differ from the reference on {_items(worker)}"
        if seen.get("versions"):
            return Parity(
                False,
                "versions",
                f"{where}; the driver and the workers import other versions: "
                + "; ".join(seen["versions"]),
                found,
                compared,
            )
        if seen.get("config"):
            return Parity(
                False,
                "config",
                f"{where}; the config resolves otherwise on the workers: "
                + "; ".join(seen["config"]),
                found,
                compared,
            )
        if all(d.precision for d in worker):
            return Parity(
                False,
                "precision",
                f"{where}, in numbers within a relative 1e-3 only (float rounding: the order "
                "of a sum, another instruction set); set a tolerance if that is expected",
                found,
                compared,
            )
        if seen.get("threads"):
            return Parity(
                False,
                "threads",
                f"{where}, and their thread count differs from the driver's: "
                + "; ".join(seen["threads"]),
                found,
                compared,
            )
        differing = seen.get("environment") or []
        detail = (
            "; ".join(differing)
            if differing
            else "the versions, the resolved config, the threads, Python, the platform, the "
            "working folder and the variables of kit.check.ENV_VARS are all the same"
        )
        return Parity(False, "environment", f"{where}; compared: {detail}", found, compared)
    return Parity(
        False,
        "batching",
        f"batched as configured, {_items(batched)} differ from the same worker one at a time "
        "(padding, or a batch's shared state)",
        found,
        compared,
    )
