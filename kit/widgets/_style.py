"""Inline styles shared by the panels (nothing to ship as a stylesheet, nothing to fetch)."""

import html

from kit.views import FAILED_COLOR

#: CSS for the panels' tables. Long text wraps between words (``break-word``, and
#: only inside a word when that word alone is wider than the panel); ``anywhere``
#: would let a narrow panel squeeze every column, splitting "completed" in two.
TABLE_STYLE = (
    "<style>.kit-table{border-collapse:collapse;font-size:12px;margin:4px 0}"
    ".kit-table th,.kit-table td{border:1px solid #dee2e6;padding:2px 8px;text-align:left;"
    "vertical-align:top;min-width:3em;max-width:40em;overflow-wrap:break-word}"
    ".kit-table th{background:#f1f3f5;white-space:nowrap}"
    ".kit-scroll{overflow-x:auto;max-width:100%}</style>"
)


def scrolling(table: str) -> str:
    """Wrap a table so a wide one scrolls sideways instead of squeezing its words apart.

    Examples
    --------
    >>> scrolling("<table></table>")
    "<div class='kit-scroll'><table></table></div>"
    """
    return f"<div class='kit-scroll'>{table}</div>"


def error_html(message: str) -> str:
    """Return an error message as the panels show it: red, preformatted, wrapped."""
    return (
        f"<pre class='kit-error' style='color:{FAILED_COLOR};white-space:pre-wrap;margin:2px 0'>"
        f"{html.escape(message)}</pre>"
    )
