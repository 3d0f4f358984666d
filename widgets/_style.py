"""Inline styles shared by the panels (nothing to ship as a stylesheet, nothing to fetch)."""

import html

from kit._format import FAILED_COLOR

#: CSS for the panels' tables.
TABLE_STYLE = (
    "<style>.kit-table{border-collapse:collapse;font-size:12px;margin:4px 0}"
    ".kit-table th,.kit-table td{border:1px solid #dee2e6;padding:2px 8px;text-align:left;"
    "vertical-align:top}.kit-table th{background:#f1f3f5}</style>"
)


def error_html(message: str) -> str:
    """Return an error message as the panels show it: red, preformatted, wrapped."""
    return (
        f"<pre class='kit-error' style='color:{FAILED_COLOR};white-space:pre-wrap;margin:2px 0'>"
        f"{html.escape(message)}</pre>"
    )
