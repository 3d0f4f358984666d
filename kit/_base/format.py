"""Small text formatting shared by the views."""

from __future__ import annotations

import re
from typing import Any

# C0 controls but tab and newline, DEL, and C1 controls (0x9b is a one-byte CSI).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object) -> str:
    r"""Return ``text`` safe for a terminal: control characters shown escaped, not obeyed.

    Text that comes from a record, an error message or a file in a run
    directory may hold escape sequences that recolour, retitle or rewrite a
    terminal; Kit prints them as ``\x1b`` instead. Newlines and tabs stay.

    Examples
    --------
    >>> print(printable("item 3: \x1b]0;pwned\x07bad\r\tinput"))
    item 3: \x1b]0;pwned\x07bad\x0d	input
    """
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def first_line(error: object) -> str:
    r"""Return the first line of an error's message; an exception's empty message, its type.

    Examples
    --------
    >>> first_line(ValueError("item 3 is broken\nsee the log")), first_line(MemoryError())
    ('item 3 is broken', 'MemoryError')
    >>> first_line("")
    ''
    """
    lines = str(error).strip().splitlines()
    if lines:
        return lines[0]
    return type(error).__name__ if isinstance(error, BaseException) else ""


def duration(seconds: float | None, compact: bool = False) -> str:
    """Write a duration for people: ``42 s``, ``3 min 05 s``, ``1 h 02 min`` (``?`` if unknown).

    Under 10 s it keeps a tenth: a run of 0.2 s did not take ``0 s``.

    Examples
    --------
    >>> duration(185), duration(3725, compact=True), duration(None), duration(0.22)
    ('3 min 05 s', '1h02m', '?', '0.2 s')
    """
    if seconds is None:
        return "?"
    if seconds < 9.95:
        return f"{max(seconds, 0.0):.1f}{'' if compact else ' '}s"
    whole = int(seconds)
    hours, minutes, secs = whole // 3600, whole % 3600 // 60, whole % 60
    if compact:
        if hours:
            return f"{hours}h{minutes:02d}m"
        return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def rounded(summary: dict[str, Any], places: int = 4) -> dict[str, Any]:
    """Return a summary with its floats rounded, for printing: what is stored keeps them whole.

    Examples
    --------
    >>> rounded({"wer": 1 / 35, "words": 35, "engine": "toy"})
    {'wer': 0.0286, 'words': 35, 'engine': 'toy'}
    """
    return {k: round(v, places) if isinstance(v, float) else v for k, v in summary.items()}


def text_table(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as aligned text columns (the keys of all rows, in order).

    Examples
    --------
    >>> print(text_table([{"name": "trial-000", "wer": 0.25}, {"name": "trial-001", "x": None}]))
    name       wer   x
    trial-000  0.25  -
    trial-001  -     -
    """
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    cells = [columns] + [[_cell(row.get(key)) for key in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
