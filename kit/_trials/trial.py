"""A sweep's trials and their results: what a sweep returns and what a sweep folder reads as.

Plain data, apart from the running of trials (:mod:`kit._sweeps.sweep`): a sweep
folder read back (:class:`~kit.detached.DetachedSweep`) and the reports build the same
:class:`SweepResult` a running sweep returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from omegaconf import DictConfig

from kit._base.errors import TrialPruned as TrialPruned
from kit._base.exits import EXIT_ITEMS_FAILED, EXIT_NO_TRIALS, EXIT_OK, EXIT_TRIALS_FAILED
from kit._base.format import first_line
from kit._base.waiting import WAIT_STEP
from kit._trials.compare import compare, run_metric
from kit.result import RunResult, RunStatus

#: What ``sweep.json`` and the rows say of a trial that has not started.
PENDING = "pending"
#: What they say of a trial a search's pruner stopped.
PRUNED = "pruned"


@dataclass(frozen=True)
class TrialState:
    """Where one trial of a sweep stands: its run's status, and what is a trial's own.

    :class:`~kit.RunStatus` is the one lifecycle; a trial adds only that it has
    not started (``status`` is ``None``, said "pending"; a stopped sweep's
    running trials are pending again when it resumes) and that a search's
    pruner stopped it (``pruned``; its run was cancelled, its completed items
    are its result). :attr:`word` is how ``sweep.json`` and the rows say it.

    Examples
    --------
    >>> TrialState.read("pruned"), TrialState.read("pending").word
    (TrialState(status=<RunStatus.CANCELLED: 'cancelled'>, pruned=True), 'pending')
    >>> [TrialState.read(word).final for word in ("pending", "running", "stopped", "pruned")]
    [False, False, True, True]
    >>> TrialState.read("half-written").word, TrialState.ended(None).word
    ('error', 'error')
    """

    #: Its run's status; ``None`` before it starts.
    status: RunStatus | None = None
    #: Whether a search's pruner stopped it.
    pruned: bool = False

    @property
    def final(self) -> bool:
        """Whether the trial has ended."""
        return self.status is not None and self.status.final

    @property
    def word(self) -> str:
        """How ``sweep.json``, the rows and the tables say it."""
        if self.pruned:
            return PRUNED
        return PENDING if self.status is None else self.status.value

    @classmethod
    def read(cls, value: object) -> TrialState:
        """Return the state a word of ``sweep.json`` says; one Kit did not write reads as error."""
        if value == PENDING:
            return cls()
        if value == PRUNED:
            return cls(RunStatus.CANCELLED, pruned=True)
        try:
            return cls(RunStatus(str(value)))
        except ValueError:
            return cls(RunStatus.ERROR)

    @classmethod
    def ended(cls, result: RunResult | None) -> TrialState:
        """Return the state of a trial whose run ended with ``result`` (None: it could not run)."""
        if result is None:
            return cls(RunStatus.ERROR)
        if not result.status.final:
            raise ValueError(
                f"a trial ends with its run's final status, not {result.status.value!r}"
            )
        return cls(result.status)


@dataclass(frozen=True)
class Trial:
    """One point of a sweep: its number, the overrides that make it, its run folder.

    Examples
    --------
    >>> trial = Trial(3, ("decoder.beam_size=5", "seed=0"), Path("runs/beams/trial-003"))
    >>> trial.name, trial.values()
    ('trial-003', {'decoder.beam_size': '5', 'seed': '0'})
    """

    number: int
    overrides: tuple[str, ...]
    output_dir: Path

    @property
    def name(self) -> str:
        """The trial's folder name, ``trial-000``..."""
        return self.output_dir.name

    def values(self) -> dict[str, str]:
        """Return the trial's overrides as ``{key: value}`` (the text after ``=``)."""
        pairs = (override.split("=", 1) for override in self.overrides if "=" in override)
        return {key.lstrip("+~"): value for key, value in pairs}


#: Makes a trial's runner and its items from the trial's config (``kit run``'s way by default).
BuildTrial = Callable[[DictConfig], tuple[Any, Sequence[Any]]]

#: Called as each trial ends: the trial, its result (None if it ended in error), the error
#: (a :class:`TrialPruned` for a trial a search's pruner stopped).
TrialCallback = Callable[[Trial, RunResult | None, BaseException | None], None]


class SweepResult:
    """The trials of a sweep and each one's :class:`~kit.RunResult` (None if it ended in error).

    Examples
    --------
    >>> import tempfile, kit
    >>> slopes = ["model.coefficients=[0,1],[0,2]"]
    >>> result = kit.sweep(kit._sweeps.sweep.EXAMPLE, slopes, output_dir=tempfile.mkdtemp())
    >>> [(row["model.coefficients"], row["status"], row["max_y"]) for row in result.rows()]
    [('[0,1]', 'completed', 0.9), ('[0,2]', 'completed', 1.8)]
    >>> trial, best = result.best("max_y", minimize=False)
    >>> trial.name, best.summary
    ('trial-001', {'min_y': 0.0, 'max_y': 1.8})
    """

    def __init__(
        self,
        trials: Sequence[Trial],
        results: Sequence[RunResult | None],
        errors: dict[int, BaseException],
        summarize: Callable[[list[Any]], dict[str, Any]] | None = None,
        *,
        statuses: dict[int, TrialState] | None = None,
        study: Any = None,
        notes: dict[int, str] | None = None,
    ) -> None:
        self.trials = list(trials)
        self.results = list(results)
        self.errors = dict(errors)
        #: Why a trial stopped early (pruned, or decided), as the rows' ``note`` says it.
        self.notes = dict(notes or {})
        #: The trials' runner's ``summarize``, for comparing trials on a corpus metric.
        self.summarize = summarize
        #: Trials whose state is not their run's status alone: pruned (stopped by a
        #: search's pruner), or, read from a folder while the sweep goes on, running.
        self.statuses = dict(statuses or {})
        #: A search's ``optuna.Study`` (None for a grid).
        self.study = study

    def __repr__(self) -> str:
        done = sum(r is not None and r.status == RunStatus.COMPLETED for r in self.results)
        return (
            f"SweepResult(trials={len(self.trials)}, completed={done}, errors={len(self.errors)})"
        )

    @property
    def swept(self) -> list[str]:
        """The keys whose value differs between trials, in the order of the overrides."""
        seen: dict[str, set[str | None]] = {}  # key: the values trials give it (in order)
        values = [trial.values() for trial in self.trials]  # once: a sweep may list 200,000
        for given in values:
            for key in given:
                seen.setdefault(key, set())
        for given in values:
            for key, found in seen.items():
                if len(found) < 2:
                    found.add(given.get(key))
        return [key for key, found in seen.items() if len(found) > 1]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per trial: swept values, status, summary, counts and speed."""
        out = []
        swept = self.swept  # once for all rows
        for trial, result in zip(self.trials, self.results, strict=True):
            values = trial.values()
            row: dict[str, Any] = {"trial": trial.name}
            row.update({key: values.get(key) for key in swept})
            if result is None:
                error_text = self.errors.get(trial.number)
                row["status"] = RunStatus.ERROR.value
                row["error"] = first_line(error_text) if error_text is not None else None
            else:
                row["status"] = self.statuses.get(trial.number, TrialState(result.status)).word
                row.update(result.summary)
                row["ok"] = result.stats.ok
                if result.stats.reused:  # taken from a trial alike, not decoded again
                    row["reused"] = result.stats.reused
                row["failed"] = result.stats.failed
                row["wall_seconds"] = round(result.stats.wall_seconds, 3)
                row["items_per_second"] = round(result.stats.items_per_second, 2)
                if trial.number in self.notes:
                    row["note"] = self.notes[trial.number]
            out.append(row)
        return out

    def state(self, trial: Trial) -> TrialState:
        """Where ``trial`` stands in this result: ended with its run, in error, or not yet."""
        result = self.results[trial.number]
        if trial.number in self.statuses:
            return self.statuses[trial.number]
        if result is not None:
            return TrialState(result.status)
        return TrialState(RunStatus.ERROR) if trial.number in self.errors else TrialState()

    def to_pandas(self) -> Any:
        """Return :meth:`rows` as a pandas DataFrame (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("SweepResult.to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows())

    def against_best(
        self, metric: str, *, minimize: bool = True, resamples: int = 2000
    ) -> list[dict[str, Any]]:
        """Return :meth:`rows`, each completed trial with its difference to the best one.

        The column ``"<metric> vs best"`` holds ``b - best`` and its 95% paired
        bootstrap interval (:func:`kit.compare`, through the runner's
        ``summarize`` when it gives ``metric``, else the mean of the records'
        ``metrics[metric]``); the best trial says ``best``.

        Examples
        --------
        >>> import tempfile, kit
        >>> slopes = ["model.coefficients=[0,1],[0,2]"]
        >>> result = kit.sweep(kit._sweeps.sweep.EXAMPLE, slopes, output_dir=tempfile.mkdtemp())
        >>> [row["max_y vs best"] for row in result.against_best("max_y", minimize=False)]
        ['-0.90 [-0.90, -0.60]', 'best']
        """
        best_trial, best = self.best(metric, minimize=minimize)
        summary = self.summarize if self._summarizes(metric) else None
        column = f"{metric} vs best"
        rows = self.rows()
        for row, trial, result in zip(rows, self.trials, self.results, strict=True):
            if trial is best_trial:
                row[column] = "best"
            elif result is None or result.status != RunStatus.COMPLETED:
                row[column] = None
            else:
                try:
                    found = compare(
                        best,
                        result,
                        metric,
                        summarize=summary,
                        minimize=minimize,
                        resamples=resamples,
                        warn_few=False,  # a table row: its items are in the row beside it
                    )
                except ValueError:  # no item in common with the best (items.stop=0...)
                    row[column] = "no items in common"
                    continue
                row[column] = found.interval
        return rows

    def _summarizes(self, metric: str) -> bool:
        return self.summarize is not None and any(
            r is not None and metric in r.summary for r in self.results
        )

    def best(self, metric: str, *, minimize: bool = True) -> tuple[Trial, RunResult]:
        """Return the completed trial with the lowest ``metric`` (highest, ``minimize=False``).

        ``metric`` is a summary entry, else the mean of the records' ``metrics[metric]``.
        """
        return self.ranked(metric, minimize=minimize)[0]

    def ranked(self, metric: str, *, minimize: bool = True) -> list[tuple[Trial, RunResult]]:
        """Return the completed trials that have ``metric``, best first (ties: trial order).

        Examples
        --------
        >>> import tempfile, kit
        >>> stops = ["items.stop=2,4,3"]
        >>> result = kit.sweep(kit._sweeps.sweep.EXAMPLE, stops, output_dir=tempfile.mkdtemp())
        >>> [trial.name for trial, _ in result.ranked("max_y", minimize=False)]
        ['trial-001', 'trial-002', 'trial-000']
        """
        scored = []
        for trial, result in zip(self.trials, self.results, strict=True):
            if result is None or result.status != RunStatus.COMPLETED:
                continue
            value = run_metric(result, metric)
            if value is not None:
                scored.append((float(value), trial.number, trial, result))
        if not scored:
            have = sorted({k for r in self.results if r is not None for k in r.summary})
            raise KeyError(
                f"no completed trial has the metric {metric!r} in its summary or its "
                f"records' metrics (the summaries have: {', '.join(have) or 'nothing'})"
            )
        sign = 1 if minimize else -1
        scored.sort(key=lambda row: (sign * row[0], row[1]))
        return [(trial, result) for _, _, trial, result in scored]


class TrialPlan(Protocol):
    """Where a sweep's trials come from: a grid's fixed list, or a search asking as it goes.

    The seam knows no search library: a search plan keeps its study to itself,
    and the handle is given it apart (``SweepHandle(..., study=...)``).
    """

    #: The trials made so far, in order (a search's list grows).
    trials: list[Trial]
    #: How many trials the sweep has in all.
    total: int

    def restore(self) -> dict[int, tuple[RunResult, TrialState]]:
        """Return the trials an earlier run of the sweep finished: result and status."""

    def next(self) -> Trial | None:
        """Return the next trial to run, or None when there is none (called under a lock)."""

    def watch(self, trial: Trial, handle: Any, indices: Sequence[Any]) -> None:
        """Follow a trial's run as its items complete (a search's pruner)."""

    def ended(
        self, trial: Trial, result: RunResult | None, error: BaseException | None
    ) -> tuple[TrialState, BaseException | None]:
        """Take a trial's end; return its status for ``sweep.json`` and any error it makes."""


def follow_trials(
    partial: Callable[[], SweepResult], done: Callable[[], bool]
) -> Iterator[tuple[Trial, RunResult | None]]:
    """Yield each trial with its result (None if it gave none) as it ends.

    ``partial`` gives the sweep as it stands, ``done`` whether it has ended:
    what a live and a detached sweep both have, so iterating either is the same.
    """
    seen: set[int] = set()
    while True:
        ended = done()  # before looking: a trial that ends meanwhile is seen next time
        now = partial()
        for trial, result in zip(now.trials, now.results, strict=True):
            if trial.number not in seen and now.state(trial).final:
                seen.add(trial.number)
                yield trial, result
        if ended:
            return
        time.sleep(WAIT_STEP)


def sweep_exit_code(rows: Sequence[dict[str, Any]]) -> int:
    """Return the exit code of a sweep whose trials ended as ``rows`` (``SweepResult.rows()``).

    Pruned is a normal end. A sweep in which no trial ran is told apart from
    one whose trials failed, and both from one where only some items failed.

    Examples
    --------
    >>> sweep_exit_code([{"status": "completed", "failed": 0, "ok": 3}, {"status": "pruned"}])
    0
    >>> sweep_exit_code([{"status": "completed", "failed": 1, "ok": 2}])
    1
    >>> sweep_exit_code([{"status": "completed", "failed": 0, "ok": 3}, {"status": "error"}])
    3
    >>> sweep_exit_code([]), sweep_exit_code([{"status": "error", "ok": None}])
    (4, 4)
    """
    if not any(row.get("ok") is not None for row in rows):
        return EXIT_NO_TRIALS
    states = [TrialState.read(row["status"]) for row in rows]
    # A pruned trial is a normal end of a search; any other is its run's status.
    ran = {state.status for state in states if not state.pruned}
    if ran & {RunStatus.ERROR, RunStatus.STOPPED}:
        return EXIT_TRIALS_FAILED
    if ran & {RunStatus.CANCELLED, RunStatus.RUNNING, RunStatus.STARTING, None}:
        return EXIT_ITEMS_FAILED
    complete = all(
        not row.get("failed")
        for row, state in zip(rows, states, strict=True)
        if state.status is RunStatus.COMPLETED
    )
    return EXIT_OK if complete else EXIT_ITEMS_FAILED
