"""Kit's notebook UI (ipywidgets and jupyter_bokeh); it imports ``kit``, never the reverse.

Built from core ipywidgets and jupyter_bokeh only (no custom JavaScript), so
it works in JupyterLab 4, Notebook 7 and VS Code, offline too.
"""

# ruff: noqa: E402  (the extra is checked before the wing's imports need it)
from importlib.util import find_spec as _find_spec

# The UI uses only kit's public API, so it names its extra itself.
for _name in ("ipywidgets", "jupyter_bokeh", "bokeh"):
    if _find_spec(_name) is None:
        raise ModuleNotFoundError(
            f"kit.widgets needs {_name}, which is not installed: pip install 'kit-lab[notebook]'",
            name=_name,
        )

from kit.widgets._cluster_panel import ClusterPanel
from kit.widgets._config_editor import ConfigEditor
from kit.widgets._dashboard import dashboard_widget, show_dashboard
from kit.widgets._experiment import Experiment
from kit.widgets._run_panel import RunPanel
from kit.widgets._sweep_view import SweepView

__all__ = [
    "ClusterPanel",
    "ConfigEditor",
    "Experiment",
    "RunPanel",
    "SweepView",
    "dashboard_widget",
    "show_dashboard",
]
