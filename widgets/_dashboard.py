"""The live run dashboard as a notebook widget (jupyter_bokeh's BokehModel)."""

from __future__ import annotations

from typing import Any

from kit.dashboard import Dashboard


def load_bokehjs() -> None:
    """Load BokehJS into the notebook, inline (no CDN, works offline).

    jupyter_bokeh's widget fails with "Cannot read properties of undefined
    (reading 'require')" unless BokehJS was loaded first, by the output of a
    cell: call this while a cell runs (the panels do it when they are built),
    not from a button callback, whose output goes nowhere.
    """
    from bokeh.io import output_notebook
    from bokeh.resources import INLINE

    output_notebook(INLINE, hide_banner=True)


def dashboard_widget(dashboard: Dashboard) -> Any:
    """Return an ipywidget showing ``dashboard`` that updates live.

    Updates are pushed by the dashboard's own thread through the widget's
    comm, so the kernel stays free (``push_notebook`` is not used: it does
    nothing in JupyterLab 4 without an extension, nor in VS Code).

    Examples
    --------
    >>> from kit.dashboard import Dashboard
    >>> type(dashboard_widget(Dashboard())).__name__
    'BokehModel'
    """
    load_bokehjs()
    from jupyter_bokeh.widgets import BokehModel

    return BokehModel(dashboard.layout)


def show_dashboard(run: Any, *, interval: float = 0.5, title: str = "Kit run") -> Dashboard:
    """Display a live dashboard of ``run`` (a RunHandle) in the notebook; return it.

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
    return dashboard
