r"""The two handle shapes: a run's and a sweep's, live in this process or read from a folder.

``concurrent.futures.Future`` is the model: the same names say the same
things whoever drives the work. :class:`kit.RunHandle` (``Runner.submit``)
and :class:`kit.detached.DetachedRun` (``kit.attach`` on a run folder) are
:class:`RunFuture`\\ s; :class:`kit.SweepHandle` (``kit.submit_sweep``) and
:class:`kit.detached.DetachedSweep` (``kit.attach`` on a sweep folder) are
:class:`SweepFuture`\\ s. Views and commands take the shape, never a class.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kit.result import Index, Progress, RunResult, RunStatus

if TYPE_CHECKING:
    from kit._trials.trial import SweepResult, Trial

__all__ = ["RunFuture", "SweepFuture"]


@runtime_checkable
class RunFuture(Protocol):
    """A run, wherever it is driven: what a view, a widget or a command may ask of it.

    Examples
    --------
    >>> import tempfile, kit
    >>> from kit.examples.toy import Env, Square
    >>> out = tempfile.mkdtemp()
    >>> live = Square(Env({}), output_dir=out).submit(range(3))
    >>> _ = live.result(timeout=60)
    >>> stored = kit.attach(out)
    >>> [isinstance(h, kit.RunFuture) for h in (live, stored)]
    [True, True]
    >>> [h.status for h in (live, stored)] == [kit.RunStatus.COMPLETED] * 2
    True
    >>> [list(h) == list(live) for h in (live, stored)]
    [True, True]
    """

    @property
    def status(self) -> RunStatus:
        """Where the run stands: ``starting``, ``running``, then one final status."""
        ...

    @property
    def progress(self) -> Progress:
        """Items finished (ok or failed), failed and total, and the status, right now."""
        ...

    def done(self) -> bool:
        """Whether the run has ended (and let go of its folder)."""
        ...

    def cancel(self, timeout: float = 0.0) -> None:
        """Ask the run to stop, keeping completed chunks; wait up to ``timeout`` s for its end."""
        ...

    def result(self, timeout: float | None = None) -> RunResult:
        """Wait for the run to end and return its result (raising as the run ended)."""
        ...

    def __iter__(self) -> Iterator[tuple[Index, Any]]:
        """Yield ``(index, record)`` of each successful item as its chunk is in."""
        ...


@runtime_checkable
class SweepFuture(Protocol):
    """A sweep or search, wherever it is driven.

    Examples
    --------
    >>> import tempfile, kit
    >>> from kit._sweeps.sweep import EXAMPLE
    >>> folder = tempfile.mkdtemp()
    >>> live = kit.submit_sweep(EXAMPLE, ["items.stop=2,3"], output_dir=folder)
    >>> _ = live.result(timeout=60)
    >>> stored = kit.attach(folder)
    >>> [isinstance(h, kit.SweepFuture) for h in (live, stored)]
    [True, True]
    >>> [(h.status.value, str(h.progress)) for h in (live, stored)]
    [('completed', '2/2 trials done, 0 running'), ('completed', '2/2 trials done, 0 running')]
    >>> [[row["status"] for row in h.rows()] for h in (live, stored)]
    [['completed', 'completed'], ['completed', 'completed']]
    >>> [[trial.name for trial, _ in h] for h in (live, stored)]
    [['trial-000', 'trial-001'], ['trial-000', 'trial-001']]
    """

    @property
    def folder(self) -> Path:
        """The sweep's folder."""
        ...

    @property
    def status(self) -> RunStatus:
        """``running`` until no trial runs; then ``completed`` or ``cancelled``.

        ``error`` when its driver ended before its trials did.
        """
        ...

    @property
    def progress(self) -> Progress:
        """Trials finished (failed among them), running and in all, and the status, right now."""
        ...

    def rows(self) -> list[dict[str, Any]]:
        """One row per trial so far: its name, overrides, status, and what it gave."""
        ...

    def done(self) -> bool:
        """Whether the sweep has ended (no process drives it)."""
        ...

    def cancel(self, timeout: float = 0.0) -> None:
        """Start no more trials and stop the running ones; wait up to ``timeout`` s."""
        ...

    def result(self, timeout: float | None = None) -> SweepResult:
        """Wait for the sweep to end and return its :class:`kit.SweepResult`."""
        ...

    def partial(self) -> SweepResult:
        """Return the sweep as it stands, without waiting."""
        ...

    def __iter__(self) -> Iterator[tuple[Trial, RunResult | None]]:
        """Yield each trial with its result (``None`` if it gave none) as it ends."""
        ...
