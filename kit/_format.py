"""Small text formatting shared by the views."""

from __future__ import annotations


def duration(seconds: float | None, compact: bool = False) -> str:
    """Write a duration for people: ``42 s``, ``3 min 05 s``, ``1 h 02 min`` (``?`` if unknown).

    Examples
    --------
    >>> duration(185), duration(3725, compact=True), duration(None)
    ('3 min 05 s', '1h02m', '?')
    """
    if seconds is None:
        return "?"
    whole = int(seconds)
    hours, minutes, secs = whole // 3600, whole % 3600 // 60, whole % 60
    if compact:
        if hours:
            return f"{hours}h{minutes:02d}m"
        return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
