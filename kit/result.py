"""What a run gives back: records, item errors, statistics, progress."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kit._base.errors import RunError as RunError

Index = int | str


class RunStatus(StrEnum):
    """Where a run stands: two phases while it goes, then exactly one final status.

    It is a ``str`` enum, so ``status == "completed"`` holds and it is written
    to JSON as its value. Every part of Kit uses it: the engine, events,
    results, detached runs and dashboards.

    Examples
    --------
    >>> RunStatus("completed") is RunStatus.COMPLETED, RunStatus.COMPLETED == "completed"
    (True, True)
    >>> [s.value for s in RunStatus if s.final]
    ['completed', 'cancelled', 'stopped', 'error']
    >>> RunStatus.STARTING.describe()
    'starting cluster'
    """

    #: The cluster is starting or the env is being built on the workers.
    STARTING = "starting"
    #: Items are being run.
    RUNNING = "running"
    #: Every item ran (some may have failed: see ``errors``).
    COMPLETED = "completed"
    #: ``cancel()`` (or Ctrl-C) ended it; completed chunks are kept.
    CANCELLED = "cancelled"
    #: ``on_error="raise"`` or ``max_failures`` ended it early.
    STOPPED = "stopped"
    #: It failed as a whole: the provider's setup, a bad config, no cluster.
    ERROR = "error"

    @property
    def final(self) -> bool:
        """Whether the run has ended."""
        return self not in (RunStatus.STARTING, RunStatus.RUNNING)

    def describe(self) -> str:
        """Say the status in a few words for people (views add colours)."""
        return "starting cluster" if self is RunStatus.STARTING else self.value


@dataclass(frozen=True)
class ItemError:
    """One item whose ``forward`` raised (or whose chunk could not be run).

    Attributes
    ----------
    index
        The item's index, as passed to ``run``.
    position
        Where the item stands in the list of indices given to ``run``.
    type
        Qualified name of the exception type, e.g. ``"builtins.ValueError"``.
    message
        ``str(exception)``.
    traceback
        The formatted traceback, as seen on the worker.
    worker
        Name of the worker (``"driver"`` in inline runs).

    Examples
    --------
    >>> err = ItemError(7, 2, "builtins.ValueError", "bad item", "Traceback ...", "0")
    >>> print(err)
    item 7 (position 2) failed on worker 0: builtins.ValueError: bad item
    """

    index: Index
    position: int
    type: str
    message: str
    traceback: str
    worker: str

    @classmethod
    def from_exception(
        cls, index: Index, position: int, exc: BaseException, worker: str
    ) -> ItemError:
        """Describe ``exc`` raised by item ``index``; skip Kit's own frame."""
        tb = exc.__traceback__
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(exc), exc, tb))
        kind = type(exc)
        return cls(
            index, position, f"{kind.__module__}.{kind.__qualname__}", str(exc), text, worker
        )

    def __str__(self) -> str:
        return (
            f"item {self.index!r} (position {self.position}) failed on worker {self.worker}: "
            f"{self.type}: {self.message}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the error as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class WorkerStats:
    """Items run and seconds spent in ``forward`` by one worker.

    Examples
    --------
    >>> WorkerStats(items=10, busy_seconds=0.5, chunks=2).items
    10
    """

    items: int = 0
    busy_seconds: float = 0.0
    chunks: int = 0


@dataclass(frozen=True)
class RunStats:
    """Counts and timings of a run.

    ``items`` is the number of indices asked for; ``ok + failed + not_run``
    equals it. ``resumed`` counts items whose results were read back from
    ``output_dir`` instead of being run again.

    Examples
    --------
    >>> stats = RunStats(items=4, ok=3, failed=1, not_run=0, resumed=0,
    ...                  wall_seconds=2.0, setup_seconds=0.1, chunks=2)
    >>> stats.items_per_second
    2.0
    """

    items: int
    ok: int
    failed: int
    not_run: int
    resumed: int
    wall_seconds: float
    setup_seconds: float
    chunks: int
    workers: dict[str, WorkerStats] = field(default_factory=dict)
    #: Items whose record was taken from a run alike, not computed (docs/reuse.md).
    reused: int = 0

    @property
    def computed(self) -> int:
        """Items whose ``forward`` ran in this run: not resumed, not reused."""
        return self.ok + self.failed - self.resumed - self.reused

    @property
    def items_per_second(self) -> float:
        """Items finished (ok or failed) in this run per second of wall time."""
        ran = self.ok + self.failed - self.resumed
        return ran / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the statistics as a JSON-ready dict."""
        out = asdict(self)
        out["items_per_second"] = self.items_per_second
        out["computed"] = self.computed
        return out


@dataclass(frozen=True)
class Progress:
    """How far a run or a sweep is: what finished (ok or failed), failed, total, its status.

    The one shape of ``progress`` on every handle: a run counts items, a
    sweep or search counts trials (``unit="trials"``) and says how many run.

    Examples
    --------
    >>> Progress(done=5, failed=1, total=20).fraction
    0.25
    >>> print(Progress(0, 0, 20, RunStatus.STARTING))
    starting cluster: 0/20 items
    >>> print(Progress(2, 0, 4, running=2, unit="trials"))
    2/4 trials done, 2 running
    >>> Progress(2, 0, 4, RunStatus.CANCELLED, running=1, unit="trials").counts
    '2/4 trials done, 1 running'
    """

    done: int
    failed: int
    total: int
    status: RunStatus = RunStatus.RUNNING
    #: Of a sweep's trials, how many run now (0 for a run's items).
    running: int = 0
    #: What is counted: ``items`` (a run) or ``trials`` (a sweep or search).
    unit: str = "items"

    def __str__(self) -> str:
        if self.unit == "trials":
            cancelled = ", cancelled" if self.status is RunStatus.CANCELLED else ""
            return f"{self.counts}{cancelled}"
        return f"{self.status.describe()}: {self.counts}"

    @property
    def counts(self) -> str:
        """The counts alone, without the status: ``5/20 items, 1 failed``."""
        if self.unit == "trials":
            return f"{self.done}/{self.total} trials done, {self.running} running"
        failed = f", {self.failed} failed" if self.failed else ""
        return f"{self.done}/{self.total} {self.unit}{failed}"

    @property
    def fraction(self) -> float:
        """Share of items finished, from 0.0 to 1.0."""
        return self.done / self.total if self.total else 1.0


@dataclass
class RunResult:
    """The outcome of a run.

    Attributes
    ----------
    indices
        The indices asked for, in order.
    records
        ``forward``'s outputs in the order of ``indices``; None where an
        item failed or did not run.
    errors
        One :class:`ItemError` per failed item, in the order of ``indices``.
    stats
        Counts and timings.
    status
        A final :class:`RunStatus`: ``completed`` (every item ran),
        ``cancelled``, ``stopped`` (on_error or max_failures ended it early)
        or ``error``.
    output_dir
        Where the run was stored, or None.
    summary
        The runner's ``summarize(records)`` for a completed run.

    Examples
    --------
    >>> from kit.examples.toy import Env, Half
    >>> result = Half(Env({})).run([1, 0, 5])
    >>> result.records, result.failed_indices
    ([10, None, 2], [0])
    >>> err = result.errors[0]
    >>> err.position, err.type, err.worker
    (1, 'builtins.ZeroDivisionError', 'driver')
    """

    indices: Sequence[Index]
    records: list[Any]
    errors: list[ItemError]
    stats: RunStats
    status: RunStatus
    output_dir: Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def failed_indices(self) -> list[Index]:
        """Indices of the items that failed."""
        return [err.index for err in self.errors]

    def to_pandas(self) -> Any:
        """Return one row per item: index, record (dict records spread into columns), error.

        Needs pandas (``pip install pandas``).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("RunResult.to_pandas() needs pandas: pip install pandas") from None
        errors = {err.position: err for err in self.errors}
        rows = []
        for pos, (index, record) in enumerate(zip(self.indices, self.records, strict=True)):
            row: dict[str, Any] = {"index": index}
            if isinstance(record, dict):
                row.update(record)
            elif record is not None or pos not in errors:
                row["record"] = record
            err = errors.get(pos)
            row["error"] = f"{err.type}: {err.message}" if err else None
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"RunResult(status='{self.status}', items={s.items}, ok={s.ok}, failed={s.failed}, "
            f"not_run={s.not_run}, wall={s.wall_seconds:.2f}s, output_dir={self.output_dir})"
        )
