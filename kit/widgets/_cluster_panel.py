"""ClusterPanel: start, scale and watch the cluster a ``parallel`` section describes.

On a cluster shared by a class it also lists every run on it (who, what,
how far, how many slots, which env), as ``kit cluster runs`` prints them,
and cancels one, as ``kit cluster cancel`` does: the teacher's view.
"""

from __future__ import annotations

import dataclasses
import functools
import html
from concurrent.futures import Future
from typing import Any

import ipywidgets as w

import kit
from kit.cluster import BOARD_COLUMNS, RUN_COLUMNS, board_rows, env_rows, run_rows, runs_headline
from kit.config import PARALLEL_ENVS, ParallelConfig
from kit.views import rows_table
from kit.widgets._class_controls import ClassControls
from kit.widgets._cluster_control import ClusterControl
from kit.widgets._kernel import on_kernel_thread
from kit.widgets._style import TABLE_STYLE, error_html


def _memory(n: float | None) -> str:
    if not n:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.0f} PiB"


def workers_table(info: dict[str, Any]) -> str:
    """Return an HTML table of the workers in ``client.scheduler_info()``."""
    rows = []
    for address, worker in sorted(info.get("workers", {}).items()):
        metrics = worker.get("metrics", {})
        tasks = metrics.get("executing", 0) + metrics.get("ready", 0)
        rows.append(
            "<tr>"
            f"<td>{html.escape(str(worker.get('name', address)))}</td>"
            f"<td>{html.escape(str(worker.get('status', 'running')))}</td>"
            f"<td>{_memory(metrics.get('memory'))} / {_memory(worker.get('memory_limit'))}</td>"
            f"<td>{tasks}</td>"
            "</tr>"
        )
    body = "".join(rows) or "<tr><td colspan='4'>no workers</td></tr>"
    return (
        f"{TABLE_STYLE}<table class='kit-workers kit-table'><tr><th>worker</th><th>status</th>"
        f"<th>memory</th><th>tasks</th></tr>{body}</table>"
    )


def class_runs_html(listing: dict[str, Any], now: float | None = None) -> str:
    """Return the runs on the cluster and its envs (:func:`kit.cluster.class_runs`).

    Examples
    --------
    >>> seat = {"run_id": "1a2b3c", "user": "<ana>", "host": "lab", "runner": "Decode",
    ...         "env": "kit-env:m.Whisper:9f8e7d6c5b4a", "total": 200, "done": 50, "failed": 1,
    ...         "chunks_out": 4, "share": 2, "started": 0.0, "cancel_by": None}
    >>> page = class_runs_html({"threads": 4, "runs": [seat], "envs": {seat["env"]: []}}, now=5)
    >>> "1 run on 4 worker threads" in page, "&lt;ana&gt;" in page, "idle" in page
    (True, True, True)
    """
    table = rows_table(
        run_rows(listing, now),
        RUN_COLUMNS,
        table_class="kit-class-runs kit-table",
        row_class="kit-class-run",
    )
    envs = "".join(
        f"<li><code>{html.escape(name)}</code> {html.escape(held)}</li>"
        for name, held in env_rows(listing)
    )
    # The class board: each attendee's exercise and checks, from the scheduler's notes.
    attendees = board_rows(listing, now) if listing.get("attendees") else []
    board = rows_table(
        attendees, BOARD_COLUMNS, table_class="kit-class-board kit-table", row_class="kit-attendee"
    )
    return (
        f"{TABLE_STYLE}<b>{html.escape(runs_headline(listing))}</b>"
        f"{board if attendees else ''}"
        f"{table if listing['runs'] else ''}"
        f"<div class='kit-class-envs'>envs on the workers: "
        f"{f'<ul>{envs}</ul>' if envs else '<i>none</i>'}</div>"
    )


def job_script_html(parallel: ParallelConfig) -> str:
    """Return the job script a job-queue cluster of ``parallel`` submits, folded ("": not one).

    Examples
    --------
    >>> from kit.config import parallel_section
    >>> job_script_html(parallel_section({"env": "local"}))
    ''
    """
    from kit.cluster import JOB_QUEUES, job_script

    if parallel.env not in JOB_QUEUES:
        return ""
    try:
        script = job_script(parallel)
    except Exception as exc:
        script = f"(cannot build the job script: {exc})"
    return (
        f"<details><summary>job script ({html.escape(parallel.env)})</summary>"
        f"<pre class='kit-job-script'>{html.escape(script)}</pre></details>"
    )


class ClusterPanel(w.VBox):  # type: ignore[misc]
    """Start, stop, scale and watch a cluster; it drives Kit's own session objects.

    It is the one place that says which cluster runs use: :meth:`for_runs`
    is the running session's ``parallel`` section (or the one the panel
    describes, when none runs), the Experiment app builds its runners from
    it, and a session a run started shows here as running (:meth:`show`).
    Kit's session registry (``kit.get_session``) does the sharing.

    Examples
    --------
    >>> panel = ClusterPanel({"env": "inline"})
    >>> panel.start_button.click()  # returns at once; the session starts in the background
    >>> session = panel.ready.result(timeout=60)
    >>> session is panel.session, session.client is None
    (True, True)
    """

    def __init__(self, parallel: Any, *, refresh_seconds: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("kit-cluster-panel")  # for tests and a user's own CSS
        #: The panel's model: the cluster runs use, its session, starting and watching it.
        self.control = ClusterControl(parallel)
        self.refresh_seconds = refresh_seconds
        shown = self.control.parallel
        self.env = w.Dropdown(options=list(PARALLEL_ENVS), value=shown.env, description="env")
        self.n_workers = w.BoundedIntText(
            value=shown.n_workers, min=1, max=10_000, description="workers"
        )
        self.start_button = w.Button(description="Start", icon="play", button_style="success")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.scale_button = w.Button(description="Scale", icon="arrows-v", disabled=True)
        self.adapt_min = w.BoundedIntText(
            value=1, min=0, max=10_000, description="adapt min", layout=w.Layout(width="180px")
        )
        self.adapt_max = w.BoundedIntText(
            value=shown.n_workers,
            min=1,
            max=10_000,
            description="max",
            layout=w.Layout(width="160px"),
        )
        self.adapt_button = w.Button(description="Adapt", icon="magic", disabled=True)
        self.status = w.HTML()
        self.workers = w.HTML()
        #: Every run on the cluster (other notebooks' too) and the envs on its workers.
        self.runs = w.HTML()
        #: The teacher's buttons: cancel a run on the cluster, warm a config's env.
        self.teacher = ClassControls(self.control, self._set_status, self._show_error)
        self.script = w.HTML()
        self.start_button.on_click(lambda _: self._guarded(self.start))
        self.stop_button.on_click(lambda _: self._guarded(self.stop))
        self.scale_button.on_click(lambda _: self._guarded(self.scale))
        self.adapt_button.on_click(lambda _: self._guarded(self.adapt))
        self.env.observe(lambda _: self._guarded(self._show_script), names="value")
        self.children = [
            w.HBox([self.env, self.n_workers]),
            w.HBox([self.start_button, self.stop_button, self.scale_button]),
            w.HBox([self.adapt_min, self.adapt_max, self.adapt_button]),
            self.status,
            self.workers,
            self.runs,
            self.teacher,
            self.script,
        ]
        self._show_script()
        # A session started before this panel: show it, not "stopped".
        earlier = self.control.running_before()
        if earlier is not None:
            self.show(earlier)
        else:
            self._set_status()

    @property
    def session(self) -> kit.Session | None:
        """The session shown (and used by runs), or None when stopped."""
        return self.control.session

    @property
    def ready(self) -> Future[kit.Session] | None:
        """The session being started by the latest Start (a future)."""
        return self.control.ready

    # ------------------------------------------------------------ actions
    def _current(self) -> ParallelConfig:
        return dataclasses.replace(
            self.control.parallel, env=self.env.value, n_workers=self.n_workers.value
        )

    def for_runs(self) -> ParallelConfig:
        """Return the ``parallel`` section runs should use: the running cluster's, if any.

        With none running, the section the panel shows (env and workers);
        the run then starts that cluster and the panel shows it.
        """
        return self.control.for_runs(self._current())

    def set_parallel(self, parallel: ParallelConfig) -> None:
        """Show ``parallel`` as the cluster to start (a config edit, say); not while one runs."""
        if self.session is not None and not self.session.closed:
            return  # runs use the running cluster, as the panel says
        self.control.parallel = parallel
        self.env.value = parallel.env
        self.n_workers.value = parallel.n_workers

    def show(self, session: kit.Session) -> None:
        """Show ``session`` as this panel's cluster (one a run started, say)."""
        if not self.control.show(session):
            return
        self.env.value = session.parallel.env
        self.n_workers.value = session.parallel.n_workers
        self._set_status()
        self.control.watch(
            self.refresh_seconds,
            lambda shown, info, listing: on_kernel_thread(
                functools.partial(self._show_asked, shown, info, listing)
            ),
            lambda: on_kernel_thread(functools.partial(self._closed_elsewhere, session)),
            lambda exc: on_kernel_thread(functools.partial(self._show_error, exc)),
        )

    def start(self) -> Future[kit.Session]:
        """Start (or reuse) the session for the chosen env and workers, in the background.

        Returns at once, so the Start button never freezes the kernel: the
        panel says "starting…" until the cluster is up (or shows why it could
        not start). The returned future (also :attr:`ready`) holds the session.
        """
        self.status.value = "<i>starting…</i>"
        self.start_button.disabled = True
        ready = self.control.start(self._current())
        # The widgets change on the kernel's thread, once the future is set on the
        # starting one (a cell waiting on it holds the kernel's thread meanwhile).
        ready.add_done_callback(lambda done: on_kernel_thread(lambda: self._started(done)))
        return ready

    def _started(self, ready: Future[kit.Session]) -> None:
        error = ready.exception()
        if error is not None:
            self.start_button.disabled = False
            self._show_error(error)
        else:
            self.show(ready.result())
            # Shown already (a run started it meanwhile, say): Start stays off all the same.
            self.start_button.disabled = self.session is not None

    def stop(self) -> None:
        """Close the session (and the cluster, if Kit started it)."""
        self.control.stop()
        self.workers.value = self.runs.value = ""
        self._set_status()  # and the teacher's controls, off: no cluster

    def scale(self) -> None:
        """Scale the cluster to the number of workers chosen."""
        self.control.scale(self.n_workers.value)
        self._set_status(f"scaling to {self.n_workers.value} workers")

    def adapt(self) -> None:
        """Let the cluster scale itself between the adaptive min and max."""
        self.control.adapt(self.adapt_min.value, self.adapt_max.value)
        self._set_status(f"adaptive: {self.adapt_min.value} to {self.adapt_max.value} workers")

    def refresh(self) -> None:
        """Redraw the workers table and the runs list now."""
        asked = self.control.ask()
        if asked is not None and self.session is not None:
            self._show_asked(self.session, *asked)

    # ------------------------------------------------------------ drawing
    def _show_asked(
        self, session: kit.Session, info: dict[str, Any], listing: dict[str, Any]
    ) -> None:
        if session is not self.session:
            return  # a cluster the panel no longer shows
        self.workers.value = workers_table(info)
        if session.cluster is None and info.get("workers"):
            # A cluster Kit did not start (a class's, say): the box says how many it has,
            # not the config's n_workers, which Kit never asked it for.
            self.n_workers.value = len(info["workers"])
        if self.control.scaled(len(info.get("workers", {}))):
            self._set_status()  # "scaling to N workers" would read as still going on
        self.runs.value = class_runs_html(listing)
        self.teacher.show_runs(listing)

    def _closed_elsewhere(self, session: kit.Session) -> None:
        # On the kernel's thread, as every change the panel shows: the watcher only says so.
        self.control.forget(session)
        self.workers.value = self.runs.value = ""
        self._set_status()

    def _set_status(self, note: str = "") -> None:
        session = self.session
        self.start_button.disabled = session is not None
        self.stop_button.disabled = session is None
        self.scale_button.disabled = self.adapt_button.disabled = not self.control.scalable
        self.teacher.connected(session is not None and session.client is not None)
        if session is None:
            self.status.value = "<b>stopped</b>"
            return
        parts = [f"<b>running</b>: {html.escape(self.control.parallel.env)}"]
        if session.client is not None:
            parts.append(f"scheduler {html.escape(session.client.scheduler.address)}")
        if session.dashboard_link:
            href = html.escape(session.dashboard_link, quote=True)
            parts.append(f"<a href='{href}' target='_blank'>Dask dashboard</a>")
        if session.job_logs:
            parts.append(f"job logs in <code>{html.escape(session.job_logs)}</code>")
        if note:
            parts.append(html.escape(note))
        self.status.value = " · ".join(parts)
        self.refresh()

    def _show_script(self) -> None:
        self.script.value = job_script_html(self._current())

    def _guarded(self, action: Any) -> None:
        """Run a button's action; show an error in the panel instead of losing it."""
        try:
            action()
        except Exception as exc:
            self._show_error(exc)

    def _show_error(self, exc: BaseException) -> None:
        self.status.value = error_html(str(exc))
