"""``kit.attach``: a handle on the run or the sweep a folder holds, from any process."""

from __future__ import annotations

import os
from pathlib import Path

from kit.detached._run import DetachedRun
from kit.detached._sweep import DetachedSweep
from kit.store._rundir import SweepDir


def attach(
    output_dir: str | os.PathLike[str], *, allow_pickle: bool = False
) -> DetachedRun | DetachedSweep:
    """Return a handle on the run (or the sweep) in ``output_dir``, from any process.

    A folder holding a sweep (``sweep.json``, no run of its own) gives a
    :class:`~kit.detached.DetachedSweep`: its trials, progress,
    ``result()`` (a :class:`~kit.SweepResult`) and ``cancel()``.

    Reading it never runs code from the directory: records a run stored as
    pickle files (``runner.record_format=pickle``) are read only with
    ``allow_pickle=True``, and then only your own files that nobody else may
    change.

    Examples
    --------
    >>> import tempfile
    >>> attach(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    FileNotFoundError: ... holds no Kit run (no manifest.json or driver.json); check the path
    """
    folder = Path(output_dir)
    if SweepDir(folder).holds_sweep():
        return DetachedSweep(folder)
    return DetachedRun(output_dir, allow_pickle=allow_pickle)
