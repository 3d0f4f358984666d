"""A live dashboard: folds events into state and redraws bokeh models on a timer."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kit.dashboard._figures import DashboardView, require_bokeh
from kit.dashboard._state import DashboardState
from kit.events import Event
from kit.result import RunStatus


class Dashboard:
    """A live bokeh dashboard of a run, fed by its events.

    The engine never waits for it: events only update plain-Python state.
    Who redraws the bokeh models from that state depends on where they are
    shown, because a bokeh document must be changed by one thread only, the
    one that serialises it. In a notebook, ``widgets.show_dashboard`` hands
    redrawing to the kernel's own thread (:meth:`drive`); served by
    :meth:`server_app`, each browser session redraws on its document's own
    callbacks; on its own (:meth:`follow` without a driver) a background
    thread redraws every ``interval`` seconds, for a layout nothing else
    reads while the run goes on (a script, a test, :meth:`document` at the
    end).

    Parameters
    ----------
    interval
        Seconds between redraws (at most one a second is the slowest).
    max_points
        Points kept per line, however long the run (old points are thinned).

    Examples
    --------
    >>> from kit.examples.toy import Env, Scored
    >>> dashboard = Dashboard()
    >>> result = Scored(Env({})).run(range(30), on_event=dashboard)
    >>> dashboard.refresh().state.snapshot().metric_means
    {'score': 1.0}
    """

    def __init__(
        self, interval: float = 0.5, max_points: int = 500, title: str = "Kit run"
    ) -> None:
        require_bokeh()
        self.interval = min(interval, 1.0)
        self.state = DashboardState(max_points=max_points)
        self.view = DashboardView(title)
        self._drawn = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake: Callable[[], None] | None = None

    def __call__(self, event: Event) -> None:
        """Take one event (the dashboard is an event subscriber)."""
        self.state(event)
        wake = self._wake
        if wake is not None:
            wake()

    def drive(self, wake: Callable[[], None]) -> None:
        """Hand redrawing to the caller: no thread of the dashboard's own touches the view.

        ``wake`` is called after each event, on whatever thread the event
        came from; it must arrange for :meth:`refresh` to run on the thread
        that owns the view (the notebook widget schedules it on the kernel's
        event loop).
        """
        self.stop()
        self._wake = wake

    @property
    def layout(self) -> Any:
        """The bokeh layout to show."""
        return self.view.layout

    def follow(self, run: Any) -> Dashboard:
        """Subscribe to a run's events (a RunHandle or its EventStream) and start redrawing.

        The stream replays what happened so far, so a run that has started,
        or even ended, is shown whole. Redrawing stops when the run ends.
        """
        stream = run.events if hasattr(run, "events") else run
        stream.subscribe(self)
        progress = getattr(run, "progress", None)
        if progress is not None and progress.status == RunStatus.STARTING:
            self.state.starting()  # a cluster starting: say so rather than show blank plots
        if self._wake is not None:
            self._wake()
        else:
            self.refresh()
            if not self.finished:
                self.start()
        return self

    @property
    def finished(self) -> bool:
        """Whether the run shown has ended."""
        return self.state.status is not None and self.state.status.final

    def refresh(self) -> Dashboard:
        """Redraw now if anything changed."""
        version = self.state.version
        if version != self._drawn:
            self.view.update(self.state.snapshot())
            self._drawn = version
        return self

    def start(self) -> None:
        """Redraw on a background thread until the run ends (or :meth:`stop`).

        Not for a dashboard that someone else drives (:meth:`drive`).
        """
        if self._wake is not None:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="kit-dashboard", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop redrawing; once this returns, no redraw of this dashboard is under way.

        Bokeh models are not safe to touch from two threads at once, even two
        dashboards' models: a script that makes the next dashboard right after
        stopping one must not race the last redraw of the one it stopped.
        """
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _loop(self) -> None:
        # Ends with the run it watches: no thread outlives it.
        while not self._stop.wait(self.interval):
            self.refresh()
            if self.finished:
                self.refresh()
                return

    def document(self) -> Any:
        """Return a bokeh Document holding the dashboard (e.g. for ``bokeh.io.show``)."""
        from bokeh.document import Document

        doc = Document()
        doc.add_root(self.layout)
        return doc

    def server_app(self) -> Any:
        """Return a function for a bokeh server: each browser session gets its own view.

        Examples
        --------
        >>> # from bokeh.server.server import Server
        >>> # Server({"/": dashboard.server_app()}, address="127.0.0.1", port=5006).start()
        """

        def make_document(doc: Any) -> None:
            view = DashboardView(self.view.title)
            view.update(self.state.snapshot())
            doc.add_root(view.layout)
            last = [self.state.version]

            def redraw() -> None:
                if self.state.version != last[0]:
                    last[0] = self.state.version
                    view.update(self.state.snapshot())

            doc.add_periodic_callback(redraw, int(self.interval * 1000))

        return make_document
