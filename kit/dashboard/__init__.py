"""Dashboards and reports of runs, drawn from their event streams.

:class:`DashboardState` (plain Python) folds events into what is shown;
:class:`Dashboard` draws it live with bokeh; :func:`write_report` writes the
standalone ``report.html`` (:func:`write_sweep_report`, a sweep's). bokeh is
an optional extra: importing this package works without it, building a view
says what to install.
"""

from kit.dashboard._live import Dashboard
from kit.dashboard._report import ReportWriter, write_report
from kit.dashboard._state import DashboardState, Series, Snapshot
from kit.dashboard._sweep_report import sweep_plots, write_sweep_report

__all__ = [
    "Dashboard",
    "DashboardState",
    "ReportWriter",
    "Series",
    "Snapshot",
    "sweep_plots",
    "write_report",
    "write_sweep_report",
]
