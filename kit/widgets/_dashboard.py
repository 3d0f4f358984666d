"""The live run dashboard as a notebook widget (jupyter_bokeh's BokehModel)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bokeh.core.json_encoder import serialize_json
from jupyter_bokeh.widgets import BokehModel

from kit.dashboard import Dashboard
from kit.views import status_words
from kit.widgets._kernel import Painter
from kit.widgets.bokehjs import load_bokehjs


class DashboardWidget(BokehModel):  # type: ignore[misc]
    """A notebook widget showing a live :class:`~kit.dashboard.Dashboard`.

    Redraws run on the kernel's thread only (see ``kit.widgets._kernel``), at
    most once per the dashboard's ``interval``, as events come from any
    thread; the kernel stays free. Once a view on the page has spoken
    (BokehJS reports its layout once rendered), redraws go to it as patches.
    Before that, they wait ``view_wait`` seconds at most, then go as the
    widget's state, the picture whole: a patch is several messages, and a
    view rendered between two of them reads every later patch shifted by
    one, staying on an old picture for good. A front end that asks for the
    widget's state again (a reloaded page, a second view of the notebook)
    gets the current picture, not the one of when the widget was made.
    """

    #: Seconds redraws wait for the page to render the view before going out anyway.
    view_wait = 5.0

    def __init__(self, dashboard: Dashboard, **kwargs: Any) -> None:
        load_bokehjs()
        self.dashboard = dashboard
        self._heard = False
        self._sent = -1  # the state version last sent whole
        self._born = time.monotonic()
        super().__init__(dashboard.layout, **kwargs)
        self.painter = Painter(self._paint, dashboard.interval, urgent=_ended(dashboard))
        dashboard.drive(self.painter.wake)

    def __repr__(self) -> str:
        """Return one line on the run, for where the widget cannot be drawn (a static page).

        ipywidgets' own repr would print the whole bokeh document.
        """
        snap = self.dashboard.state.snapshot()
        return (
            f"<Kit dashboard: {status_words(snap.status)}, {snap.done}/{snap.total} items,"
            f" {snap.failed} failed; live in Jupyter>"
        )

    def _paint(self) -> None:
        finished = self.dashboard.finished
        if not self._heard and not finished and time.monotonic() - self._born < self.view_wait:
            self.painter.wake()  # again in an interval: the view may not be on the page yet
            return
        self.dashboard.refresh()
        version = self.dashboard.state.version
        # The final picture goes whole even to a view that has spoken: a view made
        # later (the output area drawn again) starts from the widget's state, and
        # patches sent before it was made never reach it; nothing redraws after the end.
        if (not self._heard or finished) and version != self._sent:
            self._sent = version
            self.render_bundle = self._model_to_traits(self._model)

    def _document_patched(self, event: Any) -> None:
        """Send a redraw as a patch only to a view that said it is on the page."""
        if self._heard:
            super()._document_patched(event)

    def _sync_model(self, _model: Any, content: dict[str, Any], _buffers: list[Any]) -> None:
        """Take nothing back from the page, but that a view is there: the dashboard only shows.

        BokehJS sends each change it applies back to the kernel. Such an echo
        of an earlier redraw, arriving after a later one, set the kernel's
        models back (a metric's plot taken out of the layout again), and the
        echoes of the later redraw then named models the kernel no longer had
        ("can't resolve reference"). With no tools, no plot here has
        anything to tell the kernel. Its first message says a view is on the
        page, rendered from the latest state: redraws go to it as patches
        from now on.
        """
        if not self._heard:
            self._heard = True
            self.painter.wake()

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """Return the widget's state; asked for whole (a page asking again), drawn anew first."""
        state: dict[str, Any] = super().get_state(key, drop_defaults)
        if key is None and "render_bundle" in state:
            # Asked by a front end, so on the kernel's thread: safe to draw and read.
            self.dashboard.refresh()
            # The picture last sent whole is the state already: a finished run's, say.
            # Drawing it again costs ~0.1 s a dashboard, and a reloaded page waits 4 s
            # for every widget's state at once before asking each widget alone.
            if self.dashboard.state.version != self._sent:
                state["render_bundle"] = serialize_json(self._model_to_traits(self._model))
        return state


def _ended(dashboard: Dashboard) -> Callable[[], bool]:
    # The final picture is drawn at once, not an interval later.
    return lambda: dashboard.finished


def dashboard_widget(dashboard: Dashboard) -> DashboardWidget:
    """Return an ipywidget showing ``dashboard`` that updates live.

    Updates are pushed through the widget's comm from the kernel's own
    thread, so the kernel stays free (``push_notebook`` is not used: it
    does nothing in JupyterLab 4 without an extension, nor in VS Code).

    Examples
    --------
    >>> from kit.dashboard import Dashboard
    >>> type(dashboard_widget(Dashboard())).__name__
    'DashboardWidget'
    """
    return DashboardWidget(dashboard)


def show_dashboard(run: Any, *, interval: float = 0.5, title: str = "Kit run") -> None:
    """Display a live dashboard of ``run`` (a RunHandle, or its EventStream) in the notebook.

    It shows the whole run, even one that ended before the dashboard did.
    Nothing is returned, so a cell ending with it prints nothing more; for
    the dashboard object, make one and show it with :func:`dashboard_widget`.

    Examples
    --------
    >>> # handle = runner.submit(range(1000))
    >>> # show_dashboard(handle)
    """
    from IPython.display import display

    dashboard = Dashboard(interval=interval, title=title)
    widget = dashboard_widget(dashboard)
    dashboard.follow(run)
    display(widget)  # type: ignore[no-untyped-call]
