"""Detached runs and sweeps: a driver process that outlives the notebook.

``Runner.submit(..., detached=True)``, ``kit.submit_sweep`` and ``kit submit``
start ``python -m kit._driver``; :class:`DetachedRun` and
:class:`DetachedSweep` read its folder from any process, and :func:`attach`
gives the right one for a folder.

Examples
--------
>>> from kit.detached import attach
>>> attach("no/such/folder")
Traceback (most recent call last):
...
FileNotFoundError: no/such/folder holds no Kit run (no manifest.json or driver.json); check the path
"""

from kit.detached._attach import attach
from kit.detached._run import DetachedRun, DetachedStatus, Lost
from kit.detached._sweep import DetachedSweep

__all__ = ["DetachedRun", "DetachedStatus", "DetachedSweep", "Lost", "attach"]
