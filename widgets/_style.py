"""Inline styles shared by the panels (nothing to ship as a stylesheet, nothing to fetch)."""

#: CSS for the panels' tables.
TABLE_STYLE = (
    "<style>.kit-table{border-collapse:collapse;font-size:12px;margin:4px 0}"
    ".kit-table th,.kit-table td{border:1px solid #dee2e6;padding:2px 8px;text-align:left;"
    "vertical-align:top}.kit-table th{background:#f1f3f5}</style>"
)
