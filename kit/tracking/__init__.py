"""Runs and sweeps in the trackers people read: TensorBoard and MLflow, live.

Exporters are views: like the dashboard and ``report.html`` they subscribe to
a run's event stream on the driver; the engine knows nothing of them and the
workers never talk to a tracker. Turn them on with the ``tracking`` config
section (``tracking.mlflow=true`` on the command line) or ``tracking=`` in
Python; a tracker that fails gives one :class:`TrackingWarning` and the run
goes on, its folder whole.

Examples
--------
>>> from pathlib import Path
>>> from kit.tracking import Tracking
>>> Tracking.of({"tensorboard": True, "mlflow": True}).commands(Path("runs/decode"))
['tensorboard --logdir runs/tensorboard', 'mlflow ui --backend-store-uri sqlite:///runs/mlflow.db']
"""

from kit.tracking._exporter import Exporter, TrackingWarning
from kit.tracking._mlflow import MLflowExporter
from kit.tracking._spec import Tracking
from kit.tracking._tensorboard import TensorBoardExporter

__all__ = ["Exporter", "MLflowExporter", "TensorBoardExporter", "Tracking", "TrackingWarning"]
