"""HTML pieces every view shares: a status as a coloured word, failures, numbers, tables.

The notebook widgets, the live dashboard and ``report.html`` all draw a run's
status, its failures and tables of rows with these, so they read alike.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from kit.result import RunStatus

#: What a view says before it has seen its run (a dashboard opened before the run began).
WAITING = "waiting"

#: One colour per run status, for every view (panels, dashboard, report, history).
STATUS_COLORS = {
    WAITING: "#868e96",
    "starting": "#868e96",
    "running": "#1c7ed6",
    "completed": "#2b8a3e",
    "cancelled": "#e67700",
    "stopped": "#e67700",
    "error": "#c92a2a",
}


def status_words(status: str | None) -> str:
    """Say a run status for people (``starting`` reads "starting cluster"; no status, "waiting").

    Examples
    --------
    >>> status_words("starting"), status_words("completed"), status_words(None)
    ('starting cluster', 'completed', 'waiting')
    """
    if status is None:
        return WAITING
    try:
        return RunStatus(status).describe()
    except ValueError:
        return str(status)


def status_html(status: str | None) -> str:
    """Return the status as a bold, coloured word: the one way every view shows it.

    ``None`` (no run seen yet) reads "waiting".

    Examples
    --------
    >>> status_html("error")
    "<b class='kit-status' data-status='error' style='color:#c92a2a'>error</b>"
    """
    status = WAITING if status is None else status
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
