"""ClusterPanel: start, scale and watch the cluster a ``parallel`` section describes.

On a cluster shared by a class it also lists every run on it (who, what,
how far, how many slots, which env), as ``kit cluster runs`` prints them,
and cancels one, as ``kit cluster cancel`` does: the teacher's view.
"""

from __future__ import annotations

import functools
import html
import threading
from concurrent.futures import Future
from typing import Any

import ipywidgets as w

import kit
from kit.cluster import RUN_COLUMNS, cancel, class_runs, env_rows, run_rows, runs_headline
from kit.config import PARALLEL_ENVS, ParallelConfig, parallel_section
from kit.views import rows_table
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
    return (
        f"{TABLE_STYLE}<b>{html.escape(runs_headline(listing))}</b>"
        f"{table if listing['runs'] else ''}"
        f"<div class='kit-class-envs'>envs on the workers: "
        f"{f'<ul>{envs}</ul>' if envs else '<i>none</i>'}</div>"
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
        self.parallel: ParallelConfig = (
            parallel if isinstance(parallel, ParallelConfig) else parallel_section(parallel)
        )
        self.session: kit.Session | None = None
        #: The session being started by the latest Start (a future).
        self.ready: Future[kit.Session] | None = None
        self.refresh_seconds = refresh_seconds
        self._stop = threading.Event()
        #: Workers a Scale asked for, until they are there.
        self._target: int | None = None
        self.env = w.Dropdown(
            options=list(PARALLEL_ENVS), value=self.parallel.env, description="env"
        )
        self.n_workers = w.BoundedIntText(
            value=self.parallel.n_workers, min=1, max=10_000, description="workers"
        )
        self.start_button = w.Button(description="Start", icon="play", button_style="success")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.scale_button = w.Button(description="Scale", icon="arrows-v", disabled=True)
        self.adapt_min = w.BoundedIntText(
            value=1, min=0, max=10_000, description="adapt min", layout=w.Layout(width="180px")
        )
        self.adapt_max = w.BoundedIntText(
            value=self.parallel.n_workers,
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
        self.run_choice = w.Dropdown(options=[], description="run", layout=w.Layout(width="360px"))
        self.cancel_button = w.Button(description="Cancel run", icon="ban", disabled=True)
        self.script = w.HTML()
        self.start_button.on_click(lambda _: self._guarded(self.start))
        self.stop_button.on_click(lambda _: self._guarded(self.stop))
        self.scale_button.on_click(lambda _: self._guarded(self.scale))
        self.adapt_button.on_click(lambda _: self._guarded(self.adapt))
        self.cancel_button.on_click(lambda _: self._guarded(self.cancel_run))
        self.env.observe(lambda _: self._guarded(self._show_script), names="value")
        self.children = [
            w.HBox([self.env, self.n_workers]),
            w.HBox([self.start_button, self.stop_button, self.scale_button]),
            w.HBox([self.adapt_min, self.adapt_max, self.adapt_button]),
            self.status,
            self.workers,
            self.runs,
            w.HBox([self.run_choice, self.cancel_button]),
            self.script,
        ]
        self._show_script()
        # A session started before this panel: show it, not "stopped".
        for session in kit.cluster.sessions():
            if session.parallel == self.parallel and not session.closed:
                self.show(session)
                break
        else:
            self._set_status()

    # ------------------------------------------------------------ actions
    def _current(self) -> ParallelConfig:
        import dataclasses

        return dataclasses.replace(
            self.parallel, env=self.env.value, n_workers=self.n_workers.value
        )

    def for_runs(self) -> ParallelConfig:
        """Return the ``parallel`` section runs should use: the running cluster's, if any.

        With none running, the section the panel shows (env and workers);
        the run then starts that cluster and the panel shows it.
        """
        session = self.session
        if session is not None and not session.closed:
            return session.parallel
        return self._current()

    def set_parallel(self, parallel: ParallelConfig) -> None:
        """Show ``parallel`` as the cluster to start (a config edit, say); not while one runs."""
        if self.session is not None and not self.session.closed:
            return  # runs use the running cluster, as the panel says
        self.parallel = parallel
        self.env.value = parallel.env
        self.n_workers.value = parallel.n_workers

    def show(self, session: kit.Session) -> None:
        """Show ``session`` as this panel's cluster (one a run started, say)."""
        if self.session is session:
            return
        self.session = session
        self.parallel = session.parallel
        self.env.value = session.parallel.env
        self.n_workers.value = session.parallel.n_workers
        self._set_status()
        if session.client is not None:
            self._stop.clear()
            threading.Thread(target=self._watch, name="kit-cluster-panel", daemon=True).start()

    def start(self) -> Future[kit.Session]:
        """Start (or reuse) the session for the chosen env and workers, in the background.

        Returns at once, so the Start button never freezes the kernel: the
        panel says "starting…" until the cluster is up (or shows why it could
        not start). The returned future (also :attr:`ready`) holds the session.
        """
        self.parallel = self._current()
        self.status.value = "<i>starting…</i>"
        self.start_button.disabled = True
        ready: Future[kit.Session] = Future()
        self.ready = ready
        parallel = self.parallel
        threading.Thread(
            target=self._start, args=(parallel, ready), name="kit-cluster-start", daemon=True
        ).start()
        return ready

    def _start(self, parallel: ParallelConfig, ready: Future[kit.Session]) -> None:
        # On a thread of its own (a cluster takes seconds to start); the widgets
        # change on the kernel's thread. The future is set here: a cell waiting
        # on it holds the kernel's thread, which would never get to set it.
        try:
            session = kit.get_session(parallel)
        except Exception as exc:
            error = exc

            def failed() -> None:
                self.start_button.disabled = False
                self._show_error(error)

            on_kernel_thread(failed)
            ready.set_exception(error)
            return

        def started() -> None:
            self.start_button.disabled = False
            self.show(session)

        on_kernel_thread(started)
        ready.set_result(session)

    def stop(self) -> None:
        """Close the session (and the cluster, if Kit started it)."""
        self._stop.set()
        if self.session is not None:
            self.session.close()
        self.session = None
        self.workers.value = self.runs.value = ""
        self.run_choice.options = []
        self._set_status()

    def scale(self) -> None:
        """Scale the cluster to the number of workers chosen."""
        if self.session is None or self.session.cluster is None:
            raise RuntimeError("only a cluster Kit started can be scaled (not inline or remote)")
        self.session.cluster.scale(self.n_workers.value)
        self._target = self.n_workers.value
        self._set_status(f"scaling to {self.n_workers.value} workers")

    def adapt(self) -> None:
        """Let the cluster scale itself between the adaptive min and max."""
        if self.session is None or self.session.cluster is None:
            raise RuntimeError("only a cluster Kit started can adapt (not inline or remote)")
        self.session.cluster.adapt(minimum=self.adapt_min.value, maximum=self.adapt_max.value)
        self._set_status(f"adaptive: {self.adapt_min.value} to {self.adapt_max.value} workers")

    def cancel_run(self) -> dict[str, Any]:
        """Ask the run chosen in the runs list to stop, as ``kit cluster cancel`` does.

        It ends as cancelled at its next report, its completed items kept, and
        its notebook is told who cancelled it; other runs go on.
        """
        if self.session is None or self.session.client is None or not self.run_choice.value:
            raise RuntimeError("choose a run on a running cluster to cancel")
        seat = cancel(self.session.client, self.run_choice.value)
        self._set_status(f"asked run {seat['run_id']} ({seat['user']}) to stop")
        return seat

    def refresh(self) -> None:
        """Redraw the workers table and the runs list now."""
        if self.session is not None and self.session.client is not None:
            self._show_workers(self.session, self.session.client.scheduler_info())
            self._show_runs(self.session, class_runs(self.session.client))

    # ------------------------------------------------------------ drawing
    def _show_workers(self, session: kit.Session, info: dict[str, Any]) -> None:
        if session is not self.session:
            return  # a cluster the panel no longer shows
        self.workers.value = workers_table(info)
        if session.cluster is None and info.get("workers"):
            # A cluster Kit did not start (a class's, say): the box says how many it has,
            # not the config's n_workers, which Kit never asked it for.
            self.n_workers.value = len(info["workers"])
        if self._target is not None and len(info.get("workers", {})) == self._target:
            self._target = None  # scaled: "scaling to N workers" would read as still going on
            self._set_status()

    def _show_runs(self, session: kit.Session, listing: dict[str, Any]) -> None:
        if session is not self.session:
            return
        self.runs.value = class_runs_html(listing)
        rows = run_rows(listing)
        options = [
            (f"{r['run']} · {r['user']} · {r['runner']} · {r['items']}", r["run"]) for r in rows
        ]
        if list(self.run_choice.options) != options:
            chosen = self.run_choice.value
            self.run_choice.options = options
            runs = [value for _, value in options]
            # The run chosen stays chosen; else the oldest, so "Cancel run" never names nothing.
            self.run_choice.value = chosen if chosen in runs else (runs[0] if runs else None)
        self.cancel_button.disabled = not options

    def _watch(self) -> None:
        # Asks the scheduler on this thread; the widgets change on the kernel's.
        session = self.session
        while not self._stop.wait(self.refresh_seconds):
            if session is None or session is not self.session:
                return
            if session.closed:  # closed elsewhere (kit.shutdown()): its links are dead
                on_kernel_thread(self._closed_elsewhere)
                return
            try:
                assert session.client is not None  # show() watches only clusters
                info = session.client.scheduler_info()
                listing = class_runs(session.client)
            except Exception as exc:  # the cluster went away: say so, stop watching
                on_kernel_thread(functools.partial(self._show_error, exc))
                return
            on_kernel_thread(functools.partial(self._show_workers, session, info))
            on_kernel_thread(functools.partial(self._show_runs, session, listing))

    def _closed_elsewhere(self) -> None:
        self.session = None
        self.workers.value = self.runs.value = ""
        self._set_status()

    def _set_status(self, note: str = "") -> None:
        running = self.session is not None
        self.start_button.disabled = running
        self.stop_button.disabled = not running
        can_scale = running and self.session is not None and self.session.cluster is not None
        self.scale_button.disabled = self.adapt_button.disabled = not can_scale
        if not running:
            self.status.value = "<b>stopped</b>"
            return
        assert self.session is not None
        parts = [f"<b>running</b>: {html.escape(self.parallel.env)}"]
        if self.session.client is not None:
            parts.append(f"scheduler {html.escape(self.session.client.scheduler.address)}")
        link = self.session.dashboard_link
        if link:
            href = html.escape(link, quote=True)
            parts.append(f"<a href='{href}' target='_blank'>Dask dashboard</a>")
        if self.session.job_logs:
            parts.append(f"job logs in <code>{html.escape(self.session.job_logs)}</code>")
        if note:
            parts.append(html.escape(note))
        self.status.value = " · ".join(parts)
        self.refresh()

    def _show_script(self) -> None:
        env = self.env.value
        from kit.cluster import JOB_QUEUES, job_script

        if env not in JOB_QUEUES:
            self.script.value = ""
            return
        try:
            script = job_script(self._current())
        except Exception as exc:
            script = f"(cannot build the job script: {exc})"
        self.script.value = (
            f"<details><summary>job script ({html.escape(env)})</summary>"
            f"<pre class='kit-job-script'>{html.escape(script)}</pre></details>"
        )

    def _guarded(self, action: Any) -> None:
        """Run a button's action; show an error in the panel instead of losing it."""
        try:
            action()
        except Exception as exc:
            self._show_error(exc)

    def _show_error(self, exc: BaseException) -> None:
        self.status.value = error_html(str(exc))
