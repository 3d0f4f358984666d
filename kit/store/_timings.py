"""The timings a resume keeps: a resume that runs nothing reports the run that did the work."""

from __future__ import annotations

import json
from typing import Any

from kit.result import RunResult, RunStatus
from kit.store._rundir import RunDir

#: What a resume may take over from the folder's ``result.json``.
KEPT = ("items", "ok", "failed", "wall_seconds", "setup_seconds", "chunks", "workers")


def stored_timings(files: RunDir) -> dict[str, Any] | None:
    """Return the timings the folder's ``result.json`` holds for its items, checked.

    Only a completed run's wall and setup time, chunk count and per-worker
    figures, each of the type Kit writes: the counts, status and summary
    a run writes are always its own.

    Examples
    --------
    >>> import tempfile
    >>> stored_timings(RunDir(tempfile.mkdtemp())) is None  # no result.json
    True
    """
    try:
        data = json.loads(files.result.read_text())
    except (OSError, ValueError):
        return None
    stats = data.get("stats") if isinstance(data, dict) else None
    if data.get("status") != RunStatus.COMPLETED.value or not isinstance(stats, dict):
        return None
    numbers = (int, float)
    workers = stats.get("workers")
    if not (
        all(type(stats.get(k)) in numbers for k in ("wall_seconds", "setup_seconds"))
        and all(type(stats.get(k)) is int for k in ("items", "ok", "failed", "chunks"))
        and isinstance(workers, dict)
        and all(
            isinstance(w, dict)
            and type(w.get("items")) is int
            and type(w.get("chunks")) is int
            and type(w.get("busy_seconds")) in numbers
            for w in workers.values()
        )
    ):
        return None
    kept = {key: stats[key] for key in KEPT}
    # What was reused is the run's that did the work too (0 in a folder from before reuse).
    kept["reused"] = stats["reused"] if type(stats.get("reused")) is int else 0
    return kept


def stats_to_store(result: RunResult, previous: dict[str, Any] | None) -> dict[str, Any]:
    """Return the ``stats`` of ``result.json``: the run's own, or ``previous``'s timings.

    A resume that ran nothing (every item was stored already) keeps the
    timings of the run that did the work.
    """
    stats = result.stats.to_dict()
    if (
        previous is not None
        and result.status == RunStatus.COMPLETED
        and result.stats.resumed == result.stats.items
        and (previous["items"], previous["ok"], previous["failed"])
        == (result.stats.items, result.stats.ok, result.stats.failed)
    ):
        # Nothing ran: the timings of the run that made these records still hold.
        ran = previous["ok"] + previous["failed"]
        stats.update(
            {key: previous[key] for key in ("wall_seconds", "setup_seconds", "chunks")},
            workers=previous["workers"],
            resumed=0,
            reused=previous["reused"],
            computed=ran - previous["reused"],
            items_per_second=ran / previous["wall_seconds"]
            if previous["wall_seconds"] > 0
            else 0.0,
        )
    return stats
