"""The launch wing: one run request, one place that assembles it, the launchers.

Every way of starting a run (``Runner.run``/``submit``, ``kit run``, a
sweep's or a search's trial, the run panel, a detached driver) makes a
:class:`RunRequest` and hands it to :func:`assemble` (or :func:`launch`,
which also starts it). Nothing changes the user's runner.
"""

from kit.launch._assemble import assemble, check_resume, spec_of
from kit.launch._launchers import launch, run
from kit.launch._request import RunRequest, normalize_indices

__all__ = [
    "RunRequest",
    "assemble",
    "check_resume",
    "launch",
    "normalize_indices",
    "run",
    "spec_of",
]
