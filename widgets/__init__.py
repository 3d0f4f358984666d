"""Kit's notebook UI (ipywidgets and jupyter_bokeh); it imports ``kit``, never the reverse."""

from widgets._dashboard import dashboard_widget, show_dashboard

__all__ = ["dashboard_widget", "show_dashboard"]
