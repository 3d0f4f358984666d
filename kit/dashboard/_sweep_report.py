"""A sweep's report.html: the trials' table, parameters against the metric, offline.

Drawn from the sweep folder alone (``sweep.json`` and the trials' stored
results, read as :func:`kit.attach` reads them): no code from the folder runs.
"""

from __future__ import annotations

import contextlib
import html
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit._base.atomic import atomic_file
from kit._trials.compare import run_metric
from kit._trials.trial import TrialState
from kit.dashboard._figures import NO_TOOLS, PALETTE, require_bokeh
from kit.detached._sweep import DetachedSweep
from kit.result import RunStatus
from kit.store._rundir import SweepDir
from kit.views._html import rows_table

#: Columns of the trials' table shown as they are (the swept values come first).
SHOWN = ("status", "ok", "failed", "wall_seconds", "items_per_second")


def sweep_metric(record: dict[str, Any], rows: Sequence[dict[str, Any]]) -> str | None:
    """Return the metric a sweep is judged by: its search's, else the first number in the rows.

    Examples
    --------
    >>> sweep_metric({"search": {"metric": "wer"}}, [])
    'wer'
    >>> sweep_metric({}, [{"trial": "trial-000", "x": "1", "status": "completed", "ok": 3,
    ...                    "max_y": 0.9}])
    'max_y'
    """
    judged = record.get("search") or record
    if judged.get("metric"):
        return str(judged["metric"])
    plain = {"trial", "status", "error", *SHOWN}
    for row in rows:
        for key, value in row.items():
            if key not in plain and isinstance(value, int | float) and not isinstance(value, bool):
                return key
    return None


def as_number(text: Any) -> float | None:
    """Return ``text`` as a finite float, or None (a swept value such as ``whisper``).

    Examples
    --------
    >>> as_number("0.5"), as_number("5"), as_number("whisper"), as_number("nan")
    (0.5, 5.0, None, None)
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def write_sweep_report(
    folder: str | os.PathLike[str], metric: str | None = None, *, minimize: bool | None = None
) -> Path:
    """Write ``folder/report.html`` for the sweep stored there; return its path.

    The page holds the trials' table (the swept values, status, the metric
    and each trial's difference to the best with its 95% paired bootstrap
    interval, time, items/s), a parallel-coordinates view of the swept
    values against the metric, and the metric against each swept value.
    ``metric`` defaults to the search's (or the first number in the
    trials' summaries); ``minimize`` to the search's direction (else True).
    ``kit report SWEEP_FOLDER`` calls this; a sweep writes it as it ends.

    Examples
    --------
    >>> import tempfile, kit
    >>> from kit._sweeps.sweep import EXAMPLE
    >>> folder = tempfile.mkdtemp()
    >>> _ = kit.sweep(EXAMPLE, ["model.coefficients=[0,1],[0,2]", "items.stop=2,4"],
    ...               output_dir=folder)
    >>> write_sweep_report(folder, "max_y", minimize=False).name
    'report.html'
    """
    require_bokeh()
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models.widgets import Div
    from bokeh.resources import INLINE

    sweep = DetachedSweep(folder)
    record = sweep.record()
    result = sweep.partial()
    judged = record.get("search") or record
    if minimize is None:
        minimize = judged.get("direction", "minimize") != "maximize"
    rows = result.rows()
    metric = metric or sweep_metric(record, rows)
    values = {
        t.number: None if r is None or metric is None else run_metric(r, metric)
        for t, r in zip(result.trials, result.results, strict=True)
    }
    if metric is not None and any(v is not None for v in values.values()):
        # Without per-item values to pair, the table shows the metric alone.
        with contextlib.suppress(KeyError, ValueError):
            rows = result.against_best(metric, minimize=minimize)
    swept = result.swept
    for row, trial in zip(rows, result.trials, strict=True):
        if metric is not None:
            row[metric] = values[trial.number]
    title = f"Kit sweep {Path(folder).name}"
    parts: list[Any] = [
        Div(
            text=_header_html(title, str(sweep.progress), metric, minimize),
            name="kit-sweep-header",
        ),
        Div(
            text=_table_html(rows, swept, metric),
            sizing_mode="stretch_width",
            name="kit-sweep-table",
        ),
    ]
    plots = sweep_plots(result, metric) if metric is not None else None
    if plots is not None:
        parts.append(plots)
    page = file_html(column(*parts), resources=INLINE, title=title)
    target = SweepDir(folder).report
    with atomic_file(target) as fh:
        fh.write(page)
    return target


def sweep_plots(result: Any, metric: str) -> Any:
    """Return the bokeh layout of a sweep's plots, or None when no trial has ``metric`` yet.

    A parallel-coordinates view of the swept values against ``metric``, and
    ``metric`` against each swept value; for the report and the notebook.
    A trial stopped early (pruned, or decided) is drawn dashed and hollow:
    its metric is over the items it ran, not the whole set.

    Examples
    --------
    >>> import tempfile, kit
    >>> from kit._sweeps.sweep import EXAMPLE
    >>> result = kit.sweep(EXAMPLE, ["items.stop=2,4"], output_dir=tempfile.mkdtemp())
    >>> sorted(plot.name for plot in sweep_plots(result, "max_y").children[1].children)
    ['kit-sweep-items.stop']
    """
    require_bokeh()
    from bokeh.layouts import column

    swept = result.swept
    points, early = [], []
    for trial, run in zip(result.trials, result.results, strict=True):
        if run is not None and (value := run_metric(run, metric)) is not None:
            points.append((trial.values(), value))
            early.append(
                run.status != RunStatus.COMPLETED or result.state(trial) != TrialState(run.status)
            )
    if not swept or not points:
        return None
    said = []
    if any(early):
        from bokeh.models.widgets import Div

        said.append(
            Div(
                text="<small>Dashed lines, hollow points: trials stopped early (pruned, or "
                f"decided); their {html.escape(metric)} is over the items they ran.</small>",
                name="kit-sweep-early",
            )
        )
    return column(
        *said,
        _parallel_coordinates(points, swept, metric, early),
        *_against_each(points, swept, metric, early),
    )


def _header_html(title: str, progress: str, metric: str | None, minimize: bool) -> str:
    judged = (
        f" · judged by <b>{html.escape(metric)}</b> ({'lower' if minimize else 'higher'} is better)"
        if metric
        else ""
    )
    return (
        f"<div style='font-size:14px'><b>{html.escape(title)}</b> · "
        f"{html.escape(progress)}{judged}</div>"
    )


#: Trials the report's table shows at most: a page stays readable (and small) for any sweep.
TABLE_ROWS = 1000


def _table_html(rows: Sequence[dict[str, Any]], swept: Sequence[str], metric: str | None) -> str:
    against = f"{metric} vs best" if metric else None
    columns = ["trial", *swept, *(c for c in (metric, against) if c), *SHOWN, "error"]
    columns = [c for c in columns if any(c in row for row in rows)]
    style = ".kit-sweep-trials td,.kit-sweep-trials th{padding:2px 8px;text-align:left}"
    shown = rows[:TABLE_ROWS]
    table = rows_table(shown, columns, table_class="kit-sweep-trials", row_class="kit-trial")
    more = (
        f"<p>... and {len(rows) - len(shown):,} more trials: {SweepDir.RECORD} lists them all, "
        "and <code>kit.attach(folder).partial().rows()</code> reads them.</p>"
        if len(rows) > len(shown)
        else ""
    )
    return f"<h3>Trials</h3><style>{style}</style>{table}{more}"


def _axis(points: Sequence[tuple[dict[str, str], float]], key: str) -> dict[str, Any]:
    """Place one swept key's values on [0, 1]: numbers by value, other values in order."""
    texts = [values.get(key, "") for values, _ in points]
    numbers = [n for n in (as_number(t) for t in texts) if n is not None]
    if len(numbers) == len(texts):
        low, high = min(numbers), max(numbers)
        span = (high - low) or 1.0
        return {
            "positions": [(n - low) / span for n in numbers],
            "labels": {0.0: f"{low:.4g}", 1.0: f"{high:.4g}"},
        }
    order = list(dict.fromkeys(texts))
    step = 1 / max(1, len(order) - 1)
    return {
        "positions": [order.index(t) * step for t in texts],
        "labels": {i * step: t for i, t in enumerate(order)},
    }


def _parallel_coordinates(
    points: Sequence[tuple[dict[str, str], float]],
    swept: Sequence[str],
    metric: str,
    early: Sequence[bool],
) -> Any:
    """Return one line per trial across the swept keys' axes and the metric's, coloured by it."""
    from bokeh.models import ColumnDataSource, FixedTicker, LinearColorMapper, Range1d
    from bokeh.models.annotations import Label
    from bokeh.plotting import figure

    keys = [*swept, metric]
    axes = [_axis(points, key) for key in swept]
    scores = [score for _, score in points]
    low, high = min(scores), max(scores)
    span = (high - low) or 1.0
    axes.append(
        {
            "positions": [(s - low) / span for s in scores],
            "labels": {0.0: f"{low:.4g}", 1.0: f"{high:.4g}"},
        }
    )
    plot = figure(
        title=f"Parallel coordinates: the swept values and {metric}",
        height=320,
        sizing_mode="stretch_width",
        x_range=Range1d(start=-0.3, end=len(keys) - 0.7),
        y_range=Range1d(start=-0.12, end=1.12),
        toolbar_location=None,
        tools=NO_TOOLS,
        name="kit-sweep-parallel",
    )
    mapper = LinearColorMapper(
        palette=("#1c7ed6", "#7048e8", "#d6336c", "#e8590c"), low=low, high=high
    )
    for stopped, dash in ((False, "solid"), (True, "dashed")):
        drawn = [i for i in range(len(points)) if early[i] == stopped]
        source = ColumnDataSource(
            {
                "xs": [list(range(len(keys))) for _ in drawn],
                "ys": [[axis["positions"][i] for axis in axes] for i in drawn],
                "score": [scores[i] for i in drawn],
            }
        )
        plot.multi_line(
            "xs", "ys", source=source, line_width=2, line_alpha=0.8, line_dash=dash,
            line_color={"field": "score", "transform": mapper},
        )  # fmt: skip
    plot.segment(
        x0=list(range(len(keys))), y0=[0] * len(keys), x1=list(range(len(keys))),
        y1=[1] * len(keys), color="#868e96",
    )  # fmt: skip
    plot.xaxis.ticker = FixedTicker(ticks=list(range(len(keys))))
    plot.xaxis.major_label_overrides = {i: key for i, key in enumerate(keys)}
    plot.yaxis.visible = False
    plot.ygrid.visible = False
    for i, axis in enumerate(axes):
        for position, label in axis["labels"].items():
            plot.add_layout(
                Label(x=i, y=position, text=str(label), x_offset=4, text_font_size="10px")
            )
    return plot


def _against_each(
    points: Sequence[tuple[dict[str, str], float]],
    swept: Sequence[str],
    metric: str,
    early: Sequence[bool],
) -> list[Any]:
    """Return a plot of the metric against each swept key: numbers on an axis, else categories."""
    from bokeh.models import FactorRange
    from bokeh.plotting import figure

    plots = []
    for n, key in enumerate(swept):
        texts = [values.get(key, "") for values, _ in points]
        scores = [score for _, score in points]
        numbers = [n for n in (as_number(t) for t in texts) if n is not None]
        common: dict[str, Any] = {
            "title": f"{metric} against {key}",
            "height": 240,
            "width": 360,
            "toolbar_location": None,
            "tools": NO_TOOLS,
            "name": f"kit-sweep-{key}",
        }
        color = PALETTE[n % len(PALETTE)]
        if len(numbers) == len(texts):
            plot = figure(x_axis_label=key, y_axis_label=metric, **common)
            xs: list[Any] = numbers
        else:
            factors = FactorRange(factors=list(dict.fromkeys(texts)))
            plot = figure(x_range=factors, y_axis_label=metric, **common)
            xs = texts
        # Hollow: a trial stopped early, its metric over the items it ran.
        fills = ["white" if stopped else color for stopped in early]
        plot.scatter(xs, scores, size=9, line_color=color, fill_color=fills, line_width=2)
        plots.append(plot)
    from bokeh.layouts import row

    return [row(*plots)] if plots else []
