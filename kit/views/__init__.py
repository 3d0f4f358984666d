"""Views of a run's event stream (headless ones; notebook views live in ``widgets``).

Also the HTML pieces every view draws a run with (the widgets, the live
dashboard, ``report.html``), for views of your own that should read alike.
"""

from kit.views._html import (
    FAILED_COLOR,
    STATUS_COLORS,
    failed_html,
    number,
    rows_table,
    status_html,
    status_words,
)
from kit.views.terminal import TerminalProgress

__all__ = [
    "FAILED_COLOR",
    "STATUS_COLORS",
    "TerminalProgress",
    "failed_html",
    "number",
    "rows_table",
    "status_html",
    "status_words",
]
