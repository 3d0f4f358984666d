"""A sweep's live trials table: a row per trial, filling in as the trials run and end."""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w

from kit import SweepFuture, SweepResult, TrialState
from kit.views import rows_table, status_html
from kit.widgets._kernel import Painter
from kit.widgets._style import TABLE_STYLE, error_html, scrolling
from kit.widgets.bokehjs import load_bokehjs

SWEEP_TIP = (
    "Run a trial per combination of the values in the field, side by side on the cluster, "
    "on the items the run panel would run"
)

#: Columns left out of the live table (in the result's rows, for pandas); a trial's
#: ``note`` (why it stopped early: pruned, or decided) is a line under the table.
LEFT_OUT = ("ok", "note")


def trials_table(rows: Sequence[dict[str, Any]]) -> str:
    """Return a sweep's rows (``SweepHandle.rows()``) as an HTML table, columns as they come.

    Examples
    --------
    >>> table = trials_table([{"trial": "trial-000", "beam": "5", "status": "running",
    ...                        "done": "3/10", "failed": 0}])
    >>> "kit-trials" in table and "3/10" in table and "data-status='running'" in table
    True
    >>> "no trials yet" in trials_table([])
    True
    >>> pruned = {"trial": "trial-001", "status": "pruned", "note": "beam=8: decided"}
    >>> trials_table([pruned]).endswith("<b>trial-001</b>: beam=8: decided</div>")
    True
    """
    if not rows:
        return "<i>no trials yet</i>"
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns and key not in LEFT_OUT]
    table = rows_table(rows, columns, table_class="kit-trials kit-table", row_class="kit-trial-row")
    # Each note a line of its own under the table, where a long one reads whole.
    notes = "".join(
        f"<div class='kit-trial-note'><b>{html.escape(str(row['trial']))}</b>: "
        f"{html.escape(str(row['note']))}</div>"
        for row in rows
        if row.get("note")
    )
    # A trial's name and status read on one line; the table scrolls sideways instead.
    style = "<style>.kit-trials td{white-space:nowrap}</style>"
    return TABLE_STYLE + style + scrolling(table) + notes


class SweepView(w.VBox):  # type: ignore[misc]
    """A sweep going on: its trials' table, redrawn as they run, and a Cancel button.

    Made by :meth:`widgets.Experiment.sweep`, or around any
    :class:`kit.SweepFuture`: a sweep running here (:class:`kit.SweepHandle`)
    or one read from its folder (``kit.attach(folder)``). The table is drawn
    from ``handle.rows()`` at most every ``interval`` seconds while the sweep runs, and once more as
    it ends; with ``metric``, the sweep's plots (parallel coordinates, the
    metric against each swept value) are drawn under it as trials end.
    :meth:`result` waits for the sweep.

    Examples
    --------
    >>> import tempfile, kit
    >>> handle = kit.submit_sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,4"],
    ...                           output_dir=tempfile.mkdtemp())
    >>> view = SweepView(handle)
    >>> view.result(timeout=60)
    SweepResult(trials=2, completed=2, errors=0)
    >>> view.table.value.count("<tr class='kit-trial-row' data-status='completed'>")
    2
    """

    def __init__(
        self,
        handle: SweepFuture,
        *,
        metric: str | None = None,
        interval: float = 0.5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.add_class("kit-sweep")
        if metric is not None:
            # Now, in the cell's output: the plots' widget (jupyter_bokeh) is made as
            # trials end, and without BokehJS on the page it fails to render.
            load_bokehjs()
        self.handle = handle
        self.header = w.HTML()
        self.table = w.HTML()
        self.cancel_button = w.Button(description="Cancel", icon="stop", button_style="warning")
        self.cancel_button.on_click(lambda _: self.handle.cancel())
        #: The sweep's plots (parallel coordinates, the metric against each swept
        #: value), drawn anew as trials end, once one has ``metric``.
        self.plots = w.VBox()
        self.metric = metric
        self._plotted = -1
        # Outside a kernel the follow thread draws on its own; a draw that finds
        # the plots being drawn waits for them rather than returning without.
        self._drawing = threading.Lock()
        self.children = [w.HBox([self.header, self.cancel_button]), self.table, self.plots]
        self._painter = Painter(self.draw, interval, urgent=handle.done)
        self._stopped = threading.Event()
        self.draw()
        threading.Thread(
            target=self._follow, args=(interval,), name="kit-sweep-view", daemon=True
        ).start()

    def __repr__(self) -> str:
        """Return one line on the sweep, for where the widget cannot be drawn (a static page)."""
        return f"<Kit sweep in {self.handle.folder}: {self.handle.progress}; live in Jupyter>"

    def draw(self) -> None:
        """Redraw the header and the table from the sweep as it stands (kernel thread)."""
        with self._drawing:
            self._draw()

    def _draw(self) -> None:
        ended = self.handle.done()
        where = html.escape(str(self.handle.folder))
        self.header.value = (
            f"<b>sweep</b> {status_html(self.handle.status)} · "
            f"{html.escape(str(self.handle.progress))} <small>({where})</small>"
        )
        rows = self.handle.rows()
        self.table.value = trials_table(rows)
        self.cancel_button.disabled = ended
        self.cancel_button.layout.display = "none" if ended else None
        finished = sum(TrialState.read(row["status"]).final for row in rows)
        if self.metric is not None and finished != self._plotted:
            self._plotted = finished
            self._draw_plots(self.metric)

    def _draw_plots(self, metric: str) -> None:
        from jupyter_bokeh import BokehModel

        from kit.dashboard import sweep_plots

        layout = sweep_plots(self.handle.partial(), metric)
        if layout is not None:
            self.plots.children = [BokehModel(layout)]

    def _follow(self, interval: float) -> None:
        # Trials report on their runs' threads; the table is redrawn on the kernel's.
        while not self._stopped.wait(interval):
            self._painter.wake()
            if self.handle.done():
                break
        self._painter.wake()

    def result(self, timeout: float | None = None) -> SweepResult:
        """Wait for the sweep to end; draw the final table; return its :class:`kit.SweepResult`."""
        result = self.handle.result(timeout)
        self._stopped.set()
        self.draw()
        return result


class SweepBar(w.VBox):  # type: ignore[misc]
    """A field for a sweep's overrides, its button, its error, and the latest sweep's view.

    The button calls ``start(overrides)``, which starts the sweep and
    :meth:`show` s its view; what it raises (a bad override, a config with
    problems) shows under the field.

    Examples
    --------
    >>> def start(text):
    ...     raise ValueError(f"cannot parse override {text!r}")
    >>> bar = SweepBar(start)
    >>> bar.overrides.value = "x=[1"; bar.button.click()
    >>> "ValueError: cannot parse override" in bar.error.value, bar.sweeps
    (True, [])
    """

    def __init__(self, start: Callable[[str], object], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start = start
        self.overrides = w.Text(
            placeholder="e.g. decoder.beam_size=1,5 decoder.engine=whisper,pocketsphinx",
            description="sweep",
            layout=w.Layout(width="60%"),
        )
        self.button = w.Button(description="Sweep", icon="th", tooltip=SWEEP_TIP)
        self.button.on_click(lambda _: self._clicked())
        self.error = w.HTML()
        self.box = w.VBox()
        #: The sweeps started here, oldest first (their views; ``.handle``, ``.result()``).
        self.sweeps: list[SweepView] = []
        self.children = [w.HBox([self.overrides, self.button]), self.error, self.box]

    def show(self, view: SweepView) -> None:
        """Show ``view`` as the latest sweep's."""
        self.sweeps.append(view)
        self.box.children = [view]

    def _clicked(self) -> None:
        self.error.value = ""
        try:
            self.start(self.overrides.value)
        except Exception as exc:  # shown under the field: a bad override, a config problem
            self.error.value = error_html(f"{type(exc).__name__}: {exc}")
