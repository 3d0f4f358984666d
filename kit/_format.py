"""Small text formatting shared by the views."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kit.result import RunStatus

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


#: One colour per run status, for every view (panels, dashboard, report, history).
STATUS_COLORS = {
    "waiting": "#868e96",
    "starting": "#868e96",
    "running": "#1c7ed6",
    "completed": "#2b8a3e",
    "cancelled": "#e67700",
    "stopped": "#e67700",
    "error": "#c92a2a",
}


def status_words(status: str) -> str:
    """Say a run status for people (``starting`` reads "starting cluster").

    Examples
    --------
    >>> status_words("starting"), status_words("completed"), status_words("waiting")
    ('starting cluster', 'completed', 'waiting')
    """
    try:
        return RunStatus(status).describe()
    except ValueError:
        return str(status)


def status_html(status: str) -> str:
    """Return the status as a bold, coloured word: the one way every view shows it.

    Examples
    --------
    >>> status_html("error")
    "<b class='kit-status' data-status='error' style='color:#c92a2a'>error</b>"
    """
    color = STATUS_COLORS.get(str(status), "#212529")
    return (
        f"<b class='kit-status' data-status='{html.escape(str(status))}' "
        f"style='color:{color}'>{html.escape(status_words(status))}</b>"
    )


#: The colour of failures and errors, in every view.
FAILED_COLOR = STATUS_COLORS["error"]


def failed_html(failed: int) -> str:
    """Return "N failed", in red only when there are failures (0 failed is no alarm).

    Examples
    --------
    >>> failed_html(0), "c92a2a" in failed_html(3)
    ('0 failed', True)
    """
    if not failed:
        return "0 failed"
    return f"<span class='kit-failed-count' style='color:{FAILED_COLOR}'>{failed:,} failed</span>"


def number(value: object) -> str:
    """Write a value for a table cell: floats short (no 17-digit tails), the rest as ``str``.

    Examples
    --------
    >>> number(0.1 + 0.2), number(1 / 12), number(12345.678), number(3), number(None)
    ('0.3', '0.08333', '12,345.7', '3', '')
    """
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def rows_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, table_class: str, row_class: str
) -> str:
    """Return rows as an HTML table: a status column as :func:`status_html`, the rest escaped.

    Each row carries its status (``data-status``), for tests and a user's CSS.

    Examples
    --------
    >>> table = rows_table([{"trial": "trial-000", "status": "completed", "wer": 0.1234567}],
    ...                    ["trial", "wer"], table_class="t", row_class="r")
    >>> table.split("</tr>")[1]
    "<tr class='r' data-status='completed'><td>trial-000</td><td>0.1235</td>"
    """
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = "".join(
            f"<td>{status_html(str(row[c])) if c == 'status' else html.escape(number(row.get(c)))}"
            "</td>"
            for c in columns
        )
        status = html.escape(str(row.get("status", "")))
        body.append(f"<tr class='{row_class}' data-status='{status}'>{cells}</tr>")
    return f"<table class='{table_class}'><tr>{head}</tr>{''.join(body)}</table>"
