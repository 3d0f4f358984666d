"""Bokeh models that draw a :class:`Snapshot` (bokeh is imported here, lazily, only)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from kit._base.extras import DISTRIBUTION, install
from kit._base.format import duration
from kit.dashboard._state import Snapshot
from kit.result import RunStatus
from kit.views._html import FAILED_COLOR, failed_html, number, rows_table, status_html

OK_COLOR = "#2b8a3e"
#: Height of each metric's own plot.
METRIC_HEIGHT = 180
#: The tools of a plot without a toolbar: none. A hidden toolbar's tools still act (a
#: drag pans the plot away, with no reset button to bring it back), and each is models
#: every report serializes; hovering stays where a plot gives ``tooltips``.
NO_TOOLS = ""
PALETTE = ("#1c7ed6", "#e8590c", "#7048e8", "#0ca678", "#d6336c", "#5c940d", "#f08c00")
#: The failures table's look, inside the bokeh Div's shadow root (the page's CSS stays out).
FAILURES_CSS = """
table.kit-failures { border-collapse: collapse; font-size: 12px; }
.kit-failures th { text-align: left; position: sticky; top: 0; background: #f8f9fa; }
.kit-failures th, .kit-failures td {
  padding: 2px 6px; border-bottom: 1px solid #e9ecef; vertical-align: top;
}
.kit-failures td { overflow-wrap: anywhere; }
.kit-failures th, .kit-failures td:first-child { white-space: nowrap; }
"""


def require_bokeh() -> None:
    """Raise an ImportError naming the extra when bokeh is missing."""
    try:
        import bokeh  # noqa: F401
    except ImportError:
        raise ImportError(
            f"Kit's dashboard and report need bokeh: {install('dashboard')} "
            f"(or '{DISTRIBUTION}[notebook]' for the notebook widgets too)"
        ) from None


def header_html(snap: Snapshot, title: str) -> str:
    """Return the one-line summary at the top of the dashboard.

    Examples
    --------
    >>> from kit.dashboard import DashboardState
    >>> state = DashboardState()
    >>> state.starting()
    >>> "the plots fill in" in header_html(state.snapshot(), "run")
    True
    """
    parts = [f"<b>{html.escape(title)}</b>", status_html(snap.status)]
    if snap.status in (None, RunStatus.STARTING) and not snap.run_id:
        parts.append("<i>the plots fill in when the first items finish</i>")
        return f"<div class='kit-header' style='font-size:13px'>{' · '.join(parts)}</div>"
    percent = f"{100 * snap.done / snap.total:.0f}%" if snap.total else "-"
    parts.append(f"<b>{snap.done:,}/{snap.total:,}</b> items ({percent})")
    parts.append(failed_html(snap.failed))
    if snap.status is RunStatus.RUNNING:
        parts.append(f"{snap.items_per_second:,.1f} items/s")
        parts.append(f"ETA {duration(snap.eta_seconds)}")
    else:
        if snap.status is not RunStatus.COMPLETED and snap.done < snap.total:
            parts.append(f"{snap.total - snap.done:,} not run")
        parts.append(f"took {duration(snap.elapsed)}")
    if snap.resumed:
        parts.append(f"{snap.resumed:,} resumed from disk")
    if snap.dask_dashboard and snap.status is RunStatus.RUNNING:
        # Only while the run goes on: its cluster, and that page, may end with it.
        link = html.escape(snap.dask_dashboard, quote=True)
        parts.append(f"<a href='{link}' target='_blank'>Dask dashboard</a>")
    line = " · ".join(parts)
    if snap.error:
        line += (
            f"<br><span class='kit-run-error' style='color:{FAILED_COLOR}'>"
            f"{html.escape(snap.error)}</span>"
        )
    groups = metric_groups(snap)
    if groups:
        shown = " · ".join(
            f"{html.escape(label)}: "
            + ", ".join(f"{html.escape(str(k))} = {html.escape(number(v))}" for k, v in values)
            for label, values in groups
        )
        line += f"<br><span class='kit-metrics'>{shown}</span>"
    return f"<div class='kit-header' style='font-size:13px'>{line}</div>"


#: What a metric's one number is, by its x axis; the plot titles use the same words.
METRIC_LABELS = {"items": "mean over items", "step": "last logged"}


def metric_groups(snap: Snapshot) -> list[tuple[str, list[tuple[str, Any]]]]:
    """Return the header's metric numbers, grouped under what each number is.

    A per-item metric's mean, a logged metric's last value and the runner's
    summary are different numbers even under one name (a summary's share of
    all words is not the mean of per-item shares), so each group says which
    it is, in the words the plot titles use.

    Examples
    --------
    >>> from kit.dashboard import DashboardState
    >>> snap = DashboardState().snapshot()
    >>> snap.metric_means, snap.metric_axis = {"share": 0.5}, {"share": "items"}
    >>> snap.summary = {"share": 0.6}
    >>> metric_groups(snap)
    [('mean over items', [('share', 0.5)]), ('summary', [('share', 0.6)])]
    """
    groups: dict[str, list[tuple[str, Any]]] = {}
    for name, value in snap.metric_means.items():
        label = METRIC_LABELS[snap.metric_axis.get(name, "items")]
        groups.setdefault(label, []).append((name, value))
    if snap.summary:
        groups["summary"] = list(snap.summary.items())
    return list(groups.items())


def failures_html(failures: Sequence[tuple[Any, str]]) -> str:
    """Return the recent failures as an HTML table, newest first, every message escaped.

    Examples
    --------
    >>> failures_html([])
    "<p class='kit-failures'>no failures</p>"
    >>> table = failures_html([(3, "ValueError: x"), (7, "TypeError: <b> is no str")])
    >>> table.split("</tr>")[1]
    "<tr class='kit-failure' data-status=''><td>7</td><td>TypeError: &lt;b&gt; is no str</td>"
    """
    if not failures:  # a table of headers alone reads as something missing
        return "<p class='kit-failures'>no failures</p>"
    rows = [{"item": index, "recent failures": message} for index, message in reversed(failures)]
    return rows_table(
        rows, ["item", "recent failures"], table_class="kit-failures", row_class="kit-failure"
    )


def progress_plot(width: int) -> tuple[Any, Any]:
    """Return the progress bar (items ok and failed, of the run's size): its source and figure."""
    from bokeh.models import ColumnDataSource, FactorRange, Range1d
    from bokeh.plotting import figure

    source = ColumnDataSource({"y": [], "left": [], "right": [], "color": [], "label": []})
    plot = figure(
        height=70,
        width=width,
        y_range=FactorRange(factors=["items"]),
        x_range=Range1d(start=0, end=1),
        toolbar_location=None,
        tools=NO_TOOLS,
        title="progress",
        name="kit-progress",
    )
    # No legend: it would cover the bar, and the header gives the counts.
    plot.hbar(
        y="y",
        left="left",
        right="right",
        height=0.8,
        color="color",
        source=source,
    )
    plot.yaxis.visible = False
    return source, plot


def throughput_plot(width: int) -> tuple[Any, Any]:
    """Return the throughput plot (items per second over time): its source and figure."""
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    source = ColumnDataSource({"t": [], "rate": []})
    plot = figure(
        height=220,
        width=width // 2,
        title="throughput (items/s)",
        x_axis_label="seconds",
        toolbar_location=None,
        tools=NO_TOOLS,
        name="kit-throughput",
    )
    plot.line("t", "rate", source=source, line_width=2)
    # Time and rate start at 0: with one point, bokeh would centre the axes on it (-0.5).
    plot.x_range.start = 0  # type: ignore[attr-defined]
    plot.y_range.start = 0  # type: ignore[attr-defined]
    return source, plot


def workers_plot(width: int) -> tuple[Any, Any]:
    """Return the items per worker, each labelled with its busy share: source and figure."""
    from bokeh.models import ColumnDataSource, FactorRange
    from bokeh.plotting import figure

    source = ColumnDataSource({"worker": [], "items": [], "busy": [], "busy_label": []})
    plot = figure(
        height=220,
        width=width // 2,
        x_range=FactorRange(),
        title="items per worker",
        toolbar_location=None,
        tools=NO_TOOLS,
        name="kit-workers",
        tooltips=[("worker", "@worker"), ("items", "@items"), ("busy", "@busy{0%}")],
    )
    plot.vbar(x="worker", top="items", width=0.7, source=source, color=PALETTE[0])
    plot.y_range.range_padding = 0.25  # type: ignore[attr-defined]  # room for labels
    plot.y_range.start = 0  # type: ignore[attr-defined]
    # The busy share (time in forward / wall time) written on each bar.
    plot.text(
        x="worker",
        y="items",
        text="busy_label",
        source=source,
        text_align="center",
        text_baseline="bottom",
        text_font_size="11px",
    )
    return source, plot


class DashboardView:
    """The dashboard's bokeh layout; :meth:`update` redraws it from a snapshot.

    Plots: progress (ok and failed), throughput over time, items and busy
    share per worker, a small plot per user metric with its own y axis (the
    running mean over items done, from 0 to the run's size, or a logged
    value over steps), and a table of recent failures.
    """

    def __init__(self, title: str = "Kit run", width: int = 900) -> None:
        require_bokeh()
        from bokeh.layouts import column, row
        from bokeh.models.annotations import Title
        from bokeh.models.widgets import Div
        from bokeh.plotting import figure

        self.title = title
        self.header = Div(text="", sizing_mode="stretch_width")
        self.progress_source, self.progress = progress_plot(width)
        self.throughput_source, self.throughput = throughput_plot(width)
        self.workers_source, self.workers = workers_plot(width)

        # One small plot per metric, each with its own y axis: a WER of 0.05 and a
        # real-time factor of 3 on one axis would draw the WER as a flat line at 0.
        self.metrics_title = Title(text="metrics")
        self._metric_width = width // 2
        self._placeholder = figure(
            height=METRIC_HEIGHT,
            width=self._metric_width,
            title=self.metrics_title,
            toolbar_location=None,
            tools=NO_TOOLS,
        )
        # An empty line: a plot without renderers is an error in bokeh's eyes.
        self._placeholder.line(x=[], y=[])
        self._placeholder.x_range.start = 0  # type: ignore[attr-defined]
        self.metrics = column(self._placeholder, name="kit-metrics")
        self._metric_sources: dict[str, Any] = {}
        self._metric_figures: dict[str, Any] = {}

        # An HTML table, not bokeh's DataTable: SlickGrid throws "Cannot find stylesheet"
        # when its view is drawn off the page (a notebook restoring a widget view it then
        # replaces, a cell not yet attached), and the table stays broken once shown.
        self.failures = Div(
            text=failures_html([]),
            height=220,
            width=width // 2,
            styles={"overflow-y": "auto"},
            # Its own width, less a scroll bar: Div sizes its content to fit, not to fill.
            stylesheets=[FAILURES_CSS, f"table.kit-failures {{ width: {width // 2 - 20}px; }}"],
            name="kit-failures",
        )
        self.layout = column(
            self.header,
            self.progress,
            row(self.throughput, self.workers),
            row(self.metrics, self.failures),
            name="kit-dashboard",
        )

    def _add_metric(self, name: str, by_step: bool) -> Any:
        """Add a small plot for metric ``name`` under the others; return it."""
        from bokeh.models import ColumnDataSource
        from bokeh.plotting import figure

        color = PALETTE[len(self._metric_figures) % len(PALETTE)]
        plot = figure(
            height=METRIC_HEIGHT,
            width=self._metric_width,
            title=name,
            x_axis_label="step" if by_step else "items done",
            toolbar_location=None,
            tools=NO_TOOLS,
            name=f"kit-metric-{name}",
            tooltips=[(name, "@y"), ("at", "@x")],
        )
        # Named, so a page (and a browser test) can find each metric's points.
        source = ColumnDataSource({"x": [], "y": []}, name=f"kit-metric-points-{name}")
        plot.line("x", "y", source=source, line_width=2, color=color)
        plot.x_range.start = 0  # type: ignore[attr-defined]
        self._metric_sources[name] = source
        self._metric_figures[name] = plot
        self.metrics.children = list(self._metric_figures.values())
        return plot

    def update(self, snap: Snapshot) -> None:
        """Redraw from ``snap``."""
        self.header.text = header_html(snap, self.title)
        ok = snap.done - snap.failed
        total = max(snap.total, 1)
        self.progress.x_range.end = total
        self.progress_source.data = {
            "y": ["items", "items"],
            "left": [0, ok],
            "right": [ok, ok + snap.failed],
            "color": [OK_COLOR, FAILED_COLOR],
            "label": [f"ok {ok:,}", f"failed {snap.failed:,}"],
        }
        t, rate = snap.throughput
        self.throughput_source.data = {"t": t, "rate": rate}
        names = list(snap.workers)
        factors = self.workers.x_range
        if list(factors.factors) != names:
            factors.factors = names
        elapsed = max(snap.elapsed, 1e-9)
        busy = [min(1.0, w.busy_seconds / elapsed) for w in snap.workers.values()]
        self.workers_source.data = {
            "worker": names,
            "items": [w.items for w in snap.workers.values()],
            "busy": busy,
            "busy_label": [f"{share:.0%} busy" for share in busy],
        }
        if not snap.metrics and snap.done:
            # Say why the plot stays empty, and how to fill it.
            self.metrics_title.text = "metrics: none (records with a 'metrics' dict are plotted)"
        for name, (x, y) in snap.metrics.items():
            by_step = snap.metric_axis.get(name) == "step"
            plot = self._metric_figures.get(name) or self._add_metric(name, by_step)
            if not by_step:
                # Items done, from 0 to the run's size: the curve's end shows how far it got.
                plot.x_range.end = max(snap.total, 1)
            latest = f" = {number(y[-1])}" if y else ""
            what = METRIC_LABELS["step" if by_step else "items"]
            plot.title.text = f"{name}: {what}{latest}"
            self._metric_sources[name].data = {"x": x, "y": y}
        self.failures.text = failures_html(snap.failures)
