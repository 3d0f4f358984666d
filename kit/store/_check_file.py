"""A run folder's ``check.json`` read back as data: the check's forecast against the run."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from kit._base.files import UnsafeFileError, read_text
from kit.result import RunStatus
from kit.store._rundir import RunDir


@dataclass(frozen=True)
class ForecastAgainstRun:
    """What ``kit check`` forecast for a run, and what the run took.

    ``actual`` is None while the run has not completed, or when it resumed
    earlier work (its wall time is then not the whole run's); ``same`` is
    False when the check was of another config or other items.
    """

    low: float
    median: float
    high: float
    slots: int
    slot_hours: float
    actual: float | None
    same: bool

    @property
    def inside(self) -> bool | None:
        """Whether the run's wall time fell inside the forecast's 80% interval (None: no run)."""
        return None if self.actual is None else self.low <= self.actual <= self.high

    @property
    def error(self) -> float | None:
        """The run's wall time against the forecast's median, relative (+0.1: 10% longer)."""
        return None if self.actual is None or not self.median else self.actual / self.median - 1

    def __str__(self) -> str:
        forecast = (
            f"forecast {self.median:.1f} s (80%: {self.low:.1f} to {self.high:.1f} s) "
            f"on {self.slots} slot{'s' if self.slots != 1 else ''}"
        )
        if not self.same:
            return f"kit check: {forecast}, but for another config or other items than this run"
        if self.actual is None or self.error is None:
            return f"kit check: {forecast}; no complete run of its own to set it against yet"
        where = "inside" if self.inside else "outside"
        return (
            f"kit check: {forecast}; the run took {self.actual:.1f} s, {self.error:+.0%} against "
            f"the median, {where} the interval"
        )


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def forecast_against_run(folder: str | os.PathLike[str]) -> ForecastAgainstRun | None:
    """Return the folder's stored forecast against its run, or None when there is none.

    What is stored is checked as data (numbers of the right type, the
    config's hash and the items' digest against the run's manifest); a
    folder of someone else's that holds anything else reads as no forecast.

    Examples
    --------
    >>> import tempfile
    >>> forecast_against_run(tempfile.mkdtemp()) is None
    True
    """
    files = RunDir(folder)
    try:
        check = json.loads(read_text(files.check))
        manifest = json.loads(read_text(files.manifest)) if files.manifest.exists() else {}
        result = json.loads(read_text(files.result)) if files.result.exists() else {}
    except (OSError, ValueError, UnsafeFileError):
        return None
    if not all(isinstance(x, dict) for x in (check, manifest, result)):
        return None
    forecast = check.get("forecast")
    seconds = forecast.get("seconds") if isinstance(forecast, dict) else None
    if not isinstance(seconds, dict) or not isinstance(forecast, dict):
        return None
    low, median, high = (seconds.get(k, math.nan) for k in ("low", "median", "high"))
    slots, slot_hours = forecast.get("slots"), forecast.get("slot_hours", math.nan)
    if not all(_number(x) for x in (low, median, high, slot_hours)) or type(slots) is not int:
        return None
    same = bool(manifest) and all(
        check.get(key) == manifest.get(key) for key in ("config_hash", "indices_digest")
    )
    stats = result.get("stats")
    actual = None
    if (
        same
        and result.get("status") == RunStatus.COMPLETED.value
        and isinstance(stats, dict)
        and _number(stats.get("wall_seconds"))
        and stats.get("resumed") == 0
    ):
        actual = float(stats["wall_seconds"])
    return ForecastAgainstRun(
        float(low), float(median), float(high), slots, float(slot_hours), actual, same
    )
