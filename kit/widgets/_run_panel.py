"""RunPanel: check a job on a few items, watch it, read the results, then scale out."""

from __future__ import annotations

import html
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import ipywidgets as w

from kit import RunError, RunHandle, Runner, RunResult, RunStatus
from kit.check import CheckResult
from kit.dashboard import Dashboard
from kit.events import RunStarted
from kit.result import Index
from kit.views import failed_html, number, status_html
from kit.widgets._check_view import CheckView
from kit.widgets._dashboard import dashboard_widget
from kit.widgets._kernel import on_kernel_thread
from kit.widgets._sample_run import SampleRun
from kit.widgets._style import TABLE_STYLE, error_html, scrolling
from kit.widgets.bokehjs import load_bokehjs

MAX_ROWS = 200


def results_table(result: RunResult, max_rows: int = MAX_ROWS) -> str:
    """Return the records as an HTML table; failed rows in red with their traceback."""
    errors = {err.position: err for err in result.errors}
    # Items a cancelled or stopped run never ran: one line at the end, not rows of None.
    skipped = (
        {pos for pos, rec in enumerate(result.records) if rec is None and pos not in errors}
        if result.status != RunStatus.COMPLETED
        else set()
    )
    columns: list[str] = []
    for record in result.records:
        if isinstance(record, dict):
            for key in record:
                if key != "metrics" and key not in columns:
                    columns.append(key)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in ["index", *(columns or ["record"])])
    rows = []
    shown = 0
    for pos, (index, record) in enumerate(zip(result.indices, result.records, strict=True)):
        if pos in skipped:
            continue
        if shown >= max_rows:
            more = len(result.records) - len(skipped) - max_rows
            rows.append(f"<tr><td colspan='99'>… {more} more</td></tr>")
            break
        shown += 1
        err = errors.get(pos)
        if err is not None:
            rows.append(
                "<tr class='kit-failed' style='background:#ffe3e3'>"
                f"<td>{html.escape(str(index))}</td>"
                f"<td colspan='99'><details><summary>{html.escape(err.type)}: "
                f"{html.escape(err.message)}</summary><pre>{html.escape(err.traceback)}</pre>"
                "</details></td></tr>"
            )
            continue
        if columns and isinstance(record, dict):
            cells = "".join(f"<td>{html.escape(number(record.get(c)))}</td>" for c in columns)
        else:
            cells = f"<td>{html.escape(repr(record))}</td>"
        rows.append(f"<tr class='kit-ok'><td>{html.escape(str(index))}</td>{cells}</tr>")
    if skipped:
        rows.append(
            f"<tr class='kit-not-run'><td colspan='99'><i>{len(skipped):,} items not run "
            f"({html.escape(str(result.status))})</i></td></tr>"
        )
    return TABLE_STYLE + scrolling(
        f"<table class='kit-results kit-table'><tr>{head}</tr>{''.join(rows)}</table>"
    )


def copy_button(text: str) -> str:
    """Return an HTML button that copies ``text`` to the clipboard.

    The clipboard API needs a secure page (https, or 127.0.0.1 as make lab
    serves); elsewhere the button selects the text for Ctrl+C instead.

    Examples
    --------
    >>> "kit-copy" in copy_button("kit submit c.yaml")
    True
    """
    script = (
        "const t=this.dataset.text,b=this;"
        "const done=()=>{b.textContent='Copied';setTimeout(()=>b.textContent='Copy',1500)};"
        "const pick=()=>{const r=document.createRange();"
        "r.selectNodeContents(b.previousElementSibling);"
        "const s=getSelection();s.removeAllRanges();s.addRange(r);b.textContent='Ctrl+C'};"
        "if(navigator.clipboard&&window.isSecureContext)"
        "{navigator.clipboard.writeText(t).then(done,pick)}else{pick()}"
    )
    return (
        "<button class='kit-copy jupyter-button' style='flex:none;width:auto;padding:0 12px' "
        f"data-text='{html.escape(text, quote=True)}' "
        f'onclick="{html.escape(script, quote=True)}">Copy</button>'
    )


def scale_out_html(command: str) -> str:
    """Return the scale-out command to show, with where to run it and a Copy button."""
    return (
        "<div>Run the same experiment on the cluster, in a terminal opened in this "
        "notebook's folder with Kit's environment (a JupyterLab terminal of "
        "<code>make lab</code> has both):</div>"
        "<div style='display:flex;gap:6px;align-items:flex-start'>"
        f"<pre class='kit-scale-out' style='margin:0;white-space:pre-wrap'>"
        f"{html.escape(command)}</pre>{copy_button(command)}</div>"
    )


def end_line(handle: RunHandle, result: RunResult | None) -> str:
    """Return the line (HTML) that says how a run ended: status, counts, workers, time, summary."""
    progress = handle.progress
    parts = [
        f"{status_html(progress.status)}: {progress.done - progress.failed:,} ok",
        failed_html(progress.failed),
    ]
    if progress.done < progress.total:
        parts.append(f"{progress.total - progress.done:,} not run")
    session = handle.session
    if session is not None and session.client is not None and not session.closed:
        workers = session.n_workers  # the cluster this run used, as the cluster panel shows
        parts.append(f"on {workers} worker{'s' if workers != 1 else ''}")
    if result is not None:
        parts.append(f"{result.stats.wall_seconds:.2f} s")
        if result.summary:
            summary = ", ".join(f"{k} = {number(v)}" for k, v in result.summary.items())
            parts.append(f"summary: {html.escape(summary)}")
    return ", ".join(parts)


class RunPanel(w.VBox):  # type: ignore[misc]
    """Run a runner over a few items from a cell, watch it live, read the results.

    The run goes on in the background (the kernel stays free): Run starts
    it, Cancel stops it (completed items are kept). "Scale out" shows the
    ``kit submit`` command that runs the same experiment on the cluster: the
    config file, the override list from the base config to this runner's
    config, and the cluster's ``parallel.env``.

    Parameters
    ----------
    runner, indices
        The runner (its provider's config is the experiment) and all the items.
    pool_source
        Where ``indices`` come from, shown beside their count (e.g.
        ``"config items"``).
    **options
        The panel's model's (``panel.sample``), as
        :class:`~kit.widgets._sample_run.SampleRun` takes them: ``base_config``,
        ``config_path``, ``scale_out``, ``scale_out_dir``, ``check``,
        ``on_end``, ``output_dir_for``, ``parallel_for``.

    Examples
    --------
    >>> from kit.examples.toy import Env, Scored
    >>> panel = RunPanel(Scored(Env({})), range(100))
    >>> panel.how_many.value = 5
    >>> panel.run_button.click()
    >>> [record["square"] for record in panel.wait(timeout=30).records[:3]]
    [0, 1, 4]
    """

    def __init__(
        self, runner: Runner, indices: Any, *, pool_source: str = "", **options: Any
    ) -> None:
        super().__init__()
        self.add_class("kit-run-panel")  # for tests and a user's own CSS
        load_bokehjs()  # now, in the cell's output: the dashboard is made later, on a click
        #: The panel's model: the runner, the items, the latest run (this draws it).
        self.sample = SampleRun(runner, indices, **options)
        self.dashboard: Dashboard | None = None
        total = len(self.sample.indices)
        self.how_many = w.BoundedIntText(
            value=min(10, total), min=1, max=max(1, total), description="run on"
        )
        #: "of N items" beside the box: the box picks how many of the whole list run.
        self.pool = w.HTML()
        self.pool_source = pool_source
        self.how = w.ToggleButtons(
            options=[("first N", "first"), ("random sample", "random")], value="first"
        )
        self.seed = w.IntText(value=0, description="seed", layout=w.Layout(width="150px"))
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.cancel_button = w.Button(description="Cancel", icon="stop", disabled=True)
        self.scale_button = w.Button(description="Scale out", icon="cloud-upload")
        #: The Check button and the verdict card under the buttons.
        self.checking = CheckView(
            self.sample, lambda: (self.how_many.value, self.seed.value), self._show_error
        )
        self.check_button, self.check_box = self.checking.button, self.checking.box
        self.status = w.HTML()
        self.error = w.HTML()
        self.dashboard_box = w.Box()
        self.table = w.HTML()
        self.command = w.HTML()
        self.run_button.on_click(lambda _: self._guarded(self.run))
        self.cancel_button.on_click(lambda _: self._guarded(self.cancel))
        self.scale_button.on_click(lambda _: self._guarded(self.show_scale_out))
        self.check_button.on_click(lambda _: self._guarded(self.run_check))
        self.command.add_class("kit-scale-out-box")
        self.children = [
            w.HBox([self.how_many, self.pool, self.how, self.seed]),
            w.HBox([self.run_button, self.cancel_button, self.check_button, self.scale_button]),
            self.check_box,
            self.command,  # beside the button that shows it, not below the results
            self.status,
            self.error,
            self.dashboard_box,
            self.table,
        ]

        self._show_pool()

    # ------------------------------------------------------------ the model's
    @property
    def runner(self) -> Runner:
        """The runner the next run uses (the Experiment app swaps it as the config changes)."""
        return self.sample.runner

    @runner.setter
    def runner(self, runner: Runner) -> None:
        self.sample.runner = runner

    @property
    def handle(self) -> RunHandle | None:
        """The latest run's handle, or None before the first."""
        return self.sample.handle

    @property
    def result(self) -> RunResult | None:
        """The latest run's result, once it has ended (a stopped run's partial one)."""
        return self.sample.result

    # ------------------------------------------------------------ actions
    def set_indices(self, indices: Any) -> None:
        """Replace the list of all items (as the config's ``items`` change, say)."""
        self.sample.set_indices(indices)
        total = len(self.sample.indices)
        self.how_many.max = max(1, total)
        self.how_many.value = min(self.how_many.value, self.how_many.max)
        self._show_pool()

    def _show_pool(self) -> None:
        source = f" <small>({html.escape(self.pool_source)})</small>" if self.pool_source else ""
        self.pool.value = (
            f"<span class='kit-pool'>of {len(self.sample.indices):,} items{source}</span>"
        )

    def selected(self) -> list[Index]:
        """Return the items the next run will process."""
        return self.sample.selected(self.how_many.value, self.how.value, self.seed.value)

    def run(self) -> RunHandle:
        """Start a run over the selected items in the background; return its handle at once."""
        handle = self.sample.start(self.how_many.value, self.how.value, self.seed.value)
        self.error.value = ""
        self.table.value = ""
        self.dashboard = Dashboard(interval=0.25, title=f"{self.sample.selection['count']} items")
        self.dashboard_box.children = [dashboard_widget(self.dashboard)]
        self.run_button.disabled = True
        self.cancel_button.disabled = False
        self._show_status(handle)
        # The phase (starting cluster, running) here; counts are the dashboard's, live.
        handle.events.subscribe(
            lambda event: (
                on_kernel_thread(lambda: self._show_status(handle))
                if isinstance(event, RunStarted)
                else None
            ),
            replay=False,
        )
        self.dashboard.follow(handle)
        # The engine's thread says the run ended; the widgets change on the kernel's.
        handle.add_done_callback(lambda done: on_kernel_thread(lambda: self._on_done(done)))
        return handle

    def cancel(self) -> None:
        """Stop the run; completed items are kept."""
        self.sample.cancel()

    def wait(self, timeout: float | None = None) -> RunResult:
        """Wait for the current run and return its result (for scripts and tests).

        A run stopped early returns its partial result; a run that ended in
        error raises what ended it (also shown in the panel).
        """
        return self.sample.wait(self._show_end, timeout)

    def run_check(self) -> Future[CheckResult]:
        """Check the experiment before scaling out (in the background); show its verdict."""
        self.error.value = ""
        return self.checking.run()

    def scale_out_command(self) -> str:
        """Return the ``kit submit`` command that runs this experiment on the cluster.

        See :func:`kit.cluster.scale_out_command`: it runs as printed from the
        notebook's folder, a config file from elsewhere saved in the
        ``scale_out_dir`` first.
        """
        return self.sample.scale_out_command()

    def show_scale_out(self) -> None:
        """Show the scale-out command under the Scale out button, with a Copy button."""
        self.command.value = scale_out_html(self.scale_out_command())

    # ------------------------------------------------------------ callbacks
    def _show_status(self, handle: RunHandle) -> None:
        if handle.done():
            return  # the final line is _finish's
        progress = handle.progress
        self.status.value = f"{status_html(progress.status)}: {progress.total:,} items…"

    def _on_done(self, handle: RunHandle) -> None:
        # Any error is shown here, never lost.
        try:
            self.sample.finish(handle, self._show_end)
        except Exception as exc:
            self._show_error(exc)

    def _show_end(self, handle: RunHandle) -> None:
        """Show how the run ended (any final status) and make Run usable again."""
        error, result = handle.exception(), self.sample.result
        progress = handle.progress
        self.status.value = end_line(handle, result)
        if error is not None:
            if progress.done == 0:
                # Nothing ran: empty plots and a second copy of the error say nothing more.
                self.dashboard_box.children = []
            self._show_error(error)
        if result is not None:
            self.table.value = results_table(result)
        self.run_button.disabled = False
        self.cancel_button.disabled = True

    def _show_error(self, exc: BaseException) -> None:
        # A stopped run's message ends with the failing item's traceback, which the
        # results table shows folded: its first line says it all here.
        text = str(exc).splitlines()[0] if isinstance(exc, RunError) else str(exc)
        self.error.value = error_html(f"{type(exc).__name__}: {text}")
        self.run_button.disabled = False
        self.cancel_button.disabled = True

    def _guarded(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as exc:
            self._show_error(exc)
