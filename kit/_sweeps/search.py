"""Search with Optuna, Kit driving: Optuna proposes each trial, Kit runs, prunes and resumes it.

The space is written in Hydra's grammar (``lr=tag(log, interval(1e-4, 1e-1))``,
``beam=1,3,5``). The study lives in the sweep folder as Optuna's journal file,
written by the sweep's driver alone, so no shared-filesystem locking is
needed. Trials are ordinary run folders, as in a grid sweep; ``sweep.json``
maps each to its Optuna trial. Running the same search again resumes it:
finished and pruned trials are kept, a trial that was running is told
failed in the study and asked again with the same values, into its own
folder, so it resumes at chunk level.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit._from_config import build_runner
from kit._sweeps.driving import SweepSpec
from kit._sweeps.joined import waits_for
from kit._sweeps.sweep import (
    CONCURRENCY,
    EXAMPLE,  # noqa: F401  (the examples below run it)
    Prepared,
    SweepHandle,
    load_record,
    read_stored,
    split_watching,
    sweep_folder,
    sweep_tracking,
)
from kit._trials.compare import item_metric, metric_of, run_metric
from kit._trials.record import check_base, new_record
from kit._trials.trial import SweepResult, Trial, TrialCallback, TrialPruned, TrialState
from kit.config import load_config
from kit.config._api import outcome_hash
from kit.config._errors import error as config_error
from kit.config._sweeps import SearchDimension, search_space
from kit.events import ChunkFinished
from kit.result import RunResult, RunStatus
from kit.store._rundir import SweepDir
from kit.store._study import open_study, require_optuna
from kit.tracking import Tracking

DIRECTIONS = ("minimize", "maximize")
#: How often, at most, a running trial reports its metric to the pruner (per trial).
REPORTS = 20
#: Trial states in ``sweep.json`` that a resumed search keeps.
COMPLETED, PRUNED = TrialState(RunStatus.COMPLETED), TrialState.read("pruned")
KEPT = (COMPLETED, PRUNED)

Summarize = Any  # Callable[[list[Any]], dict[str, Any]] | None


#: The user attribute that marks a study's trial stopped once its comparison was decided.
DECIDED_ATTR = "kit_decided"


def pruner_named(name: str) -> Any:
    """Return the Optuna pruner ``kit sweep --prune NAME`` means: median, wilcoxon or none.

    Examples
    --------
    >>> type(pruner_named("median")).__name__, pruner_named("none")
    ('MedianPruner', None)
    """
    optuna = require_optuna()
    pruners = {
        "median": optuna.pruners.MedianPruner,
        "wilcoxon": optuna.pruners.WilcoxonPruner,
        "none": None,
    }
    if name not in pruners:
        raise config_error(f"no pruner called {name!r}", fix=f"use one of {', '.join(pruners)}")
    made = pruners[name]
    if made is None:
        return None
    with warnings.catch_warnings():  # WilcoxonPruner is marked experimental in Optuna
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return made()


class _SearchPlan:
    """A search's trials: Optuna asks as slots free up, Kit runs, the study is told."""

    def __init__(
        self,
        folder: Path,
        dims: list[SearchDimension],
        fixed: list[str],
        total: int,
        metric: str,
        study: Any,
        pruner: Any,
        record: dict[str, Any],
        summarize: Summarize,
    ) -> None:
        self.folder = folder
        self.dims = dims
        self.fixed = fixed
        self.total = total
        self.metric = metric
        self.study = study
        self._pruner = pruner
        self._record = record
        self.summarize = summarize
        # What sweep.json says of each trial is data to check, never an override to run:
        # each trial's overrides are made again from the space and its stored values.
        self.trials = [
            Trial(
                number,
                stored_overrides(folder, dims, fixed, entry),
                SweepDir(folder).trial(number).path,
            )
            for number, entry in enumerate(record["trials"])
        ]
        self._again: list[Trial] = []
        self._asked: dict[int, Any] = {}
        self._pruned: dict[int, str] = {}
        #: The sampler stopped the study (GridSampler, its grid run through): ask no more.
        self._sampler_stopped = False
        self._study_lock = threading.RLock()
        self._optuna = require_optuna()

    # ---------------------------------------------------------------- resume
    def restore(self) -> dict[int, tuple[RunResult, TrialState]]:
        states = self._optuna.trial.TrialState
        with self._study_lock:
            frozen = {t.number: t for t in self.study.get_trials(deepcopy=False)}
        known = {number: t.state for number, t in frozen.items()}
        done: dict[int, tuple[RunResult, TrialState]] = {}
        for trial, entry in zip(self.trials, self._record["trials"], strict=True):
            number = entry.get("optuna_trial", -1)
            state = known.get(number)
            status = TrialState.read(entry.get("status"))
            # The study is told before sweep.json is written: it may know the end first.
            if state == states.COMPLETE and DECIDED_ATTR in frozen[number].user_attrs:
                status = PRUNED  # stopped once decided: its run keeps the items it ran
            elif state == states.COMPLETE:
                status = COMPLETED
            elif state == states.PRUNED:
                status = PRUNED
            stored = read_stored(trial) if status in KEPT else None
            wanted = RunStatus.COMPLETED if status == COMPLETED else RunStatus.CANCELLED
            if stored is not None and stored.status in (wanted, RunStatus.COMPLETED):
                done[trial.number] = (stored, status)
                entry["status"] = status.word
            else:
                entry["status"] = TrialState().word
                self._again.append(trial)
        # The driver died while these ran, or just after asking for one: none is left
        # RUNNING (a trial sweep.json names is asked again with its values).
        for number, state in known.items():
            if state == states.RUNNING:
                self._tell(number, state=states.FAIL)
        return done

    # ---------------------------------------------------------------- asking
    def next(self) -> Trial | None:
        if self._again:
            trial = self._again.pop(0)
            entry = self._record["trials"][trial.number]
            with self._study_lock:
                self.study.enqueue_trial(entry["params"])
                asked = self.study.ask(self._distributions())
            entry["optuna_trial"] = asked.number
        elif len(self.trials) < self.total and not self._sampler_stopped:
            with self._study_lock:
                asked = self.study.ask(self._distributions())
            number = len(self.trials)
            chosen = [self._override(dim, asked.params[dim.key]) for dim in self.dims]
            trial = Trial(number, (*chosen, *self.fixed), SweepDir(self.folder).trial(number).path)
            self.trials.append(trial)
            self._record["trials"].append(
                {
                    "name": trial.name,
                    "overrides": list(trial.overrides),
                    "status": TrialState().word,
                    "params": dict(asked.params),
                    "optuna_trial": asked.number,
                }
            )
        else:
            return None
        with self._study_lock:  # which folder holds the trial, for whoever reads the study
            asked.set_user_attr("kit_trial", trial.name)
        self._asked[trial.number] = asked
        return trial

    def _distributions(self) -> dict[str, Any]:
        made = self._optuna.distributions
        out: dict[str, Any] = {}
        for dim in self.dims:
            if dim.kind == "choice":
                out[dim.key] = made.CategoricalDistribution(_choices(dim))
            elif dim.integer:
                out[dim.key] = made.IntDistribution(int(dim.low), int(dim.high), log=dim.log)
            else:
                out[dim.key] = made.FloatDistribution(dim.low, dim.high, log=dim.log)
        return out

    @staticmethod
    def _override(dim: SearchDimension, value: Any) -> str:
        if dim.kind == "choice":
            return f"{dim.key}={dim.texts[_choices(dim).index(value)]}"
        return f"{dim.key}={int(value) if dim.integer else repr(float(value))}"

    # ---------------------------------------------------------------- pruning
    def watch(self, trial: Trial, handle: Any, indices: Sequence[Any]) -> None:
        if self._pruner is None:
            return
        follower = _Follower(self, trial, handle, len(indices), self._asked[trial.number])
        # Delivered on the run's own thread as each chunk is stored, before the next
        # is handed out: a pruned trial stops at the next chunk, however busy the machine.
        handle.events.subscribe(follower)

    # ---------------------------------------------------------------- ending
    def decided(self, trial: Trial, result: RunResult, why: str) -> None:
        """Tell the study of a trial stopped once decided: its metric over the items it ran.

        Its items came in the search's one random order, so its metric over
        them (the runner's summary of its records) estimates the whole set's.
        """
        asked = self._asked.pop(trial.number)
        done = [record for record in result.records if record is not None]
        summary = dict(self.summarize(done)) if self.summarize is not None and done else {}
        value = run_metric(dataclasses.replace(result, summary=summary), self.metric)
        with self._study_lock:
            asked.set_user_attr(DECIDED_ATTR, why)
        if value is None:
            self._tell(asked, state=self._optuna.trial.TrialState.FAIL)
        else:
            self._tell(asked, value)

    def ended(
        self, trial: Trial, result: RunResult | None, error: BaseException | None
    ) -> tuple[TrialState, BaseException | None]:
        states = self._optuna.trial.TrialState
        asked = self._asked.pop(trial.number)
        if trial.number in self._pruned and result is not None:
            self._tell(asked, state=states.PRUNED)
            return PRUNED, TrialPruned(self._pruned.pop(trial.number))
        if result is not None and result.status == RunStatus.COMPLETED and error is None:
            # The trial's own summary (its runner's summarize, on its config), never the
            # probe runner's: a summarize that reads its runner's config scores each trial.
            value = run_metric(result, self.metric)
            if value is None:
                self._tell(asked, state=states.FAIL)
                have = ", ".join(sorted(result.summary)) or "nothing"
                return TrialState(RunStatus.ERROR), config_error(
                    f"{trial.name} gives no number {self.metric!r}: the summary has {have}, "
                    f"and no record has metrics[{self.metric!r}]",
                    fix="search on a metric the runner's summarize or its records give",
                )
            self._tell(asked, value)
            return COMPLETED, None
        self._tell(asked, state=states.FAIL)
        return TrialState.ended(result), error

    def _tell(self, trial: Any, value: float | None = None, state: Any = None) -> None:
        """Tell the study how ``trial`` ended (Optuna's ``tell``).

        A sampler may stop the study when told (``GridSampler``, once its
        grid is run through), which Optuna allows only inside ``optimize``
        and refuses with a RuntimeError after storing the tell: the search
        then asks for no more trials, as ``optimize`` would stop.
        """
        with self._study_lock:
            try:
                self.study.tell(trial, value, state=state)
            except RuntimeError as exc:
                if not str(exc).startswith("`Study.stop`"):
                    raise
                self._sampler_stopped = True


class _Follower:
    """Report a running trial's metric to the pruner as its chunks are stored; stop it if told.

    With a ``WilcoxonPruner`` each item's own value is reported (step: its
    position); otherwise the metric over the first ``k * stride`` items done
    (step: that count), so that trials report at the same steps.
    """

    def __init__(
        self, plan: _SearchPlan, trial: Trial, handle: Any, total: int, asked: Any
    ) -> None:
        self.plan = plan
        self.trial = trial
        self.handle = handle
        self.total = total
        self.asked = asked
        self.per_item = isinstance(plan._pruner, plan._optuna.pruners.WilcoxonPruner)
        self.stride = max(1, total // REPORTS)
        self.records: list[Any] = []
        self.stopped = False
        #: The trial's own runner's summarize (it may read that runner's config).
        self.summarize = handle.spec.summarize

    def __call__(self, event: Any) -> None:
        if self.stopped or not isinstance(event, ChunkFinished):
            return
        try:
            self._take(event)
        except Exception as failed:  # the pruner's own error: say it, prune nothing
            self.stopped = True
            warnings.warn(
                f"{self.trial.name}: the pruner failed ({failed!r}); the trial runs to the end",
                RuntimeWarning,
                stacklevel=1,
            )

    def _take(self, event: ChunkFinished) -> None:
        metric, plan = self.plan.metric, self.plan
        came = self.handle.records_between(event.start, event.start + event.items)
        reports: list[tuple[float | None, int]] = []
        for position, record in enumerate(came, start=event.start):
            if record is None:
                continue  # a failed item
            self.records.append(record)
            if self.per_item:
                reports.append((item_metric(record, metric), position))
            elif len(self.records) % self.stride == 0:
                reports.append((metric_of(self.records, metric, self.summarize), len(self.records)))
        for value, step in reports:
            if value is None:
                self.stopped = True
                warnings.warn(
                    f"{self.trial.name}: its records give no number {metric!r}, so the "
                    "pruner cannot follow it; it runs to the end",
                    RuntimeWarning,
                    stacklevel=1,
                )
                return
            with plan._study_lock:
                self.asked.report(value, step)
        if not reports:
            return
        with plan._study_lock:
            prune = self.asked.should_prune()
        if prune:
            self.stopped = True
            plan._pruned[self.trial.number] = (
                f"{self.trial.name} pruned after {len(self.records)} of {self.total} items: "
                f"{metric} {reports[-1][0]:.4g} there"
            )
            self.handle.cancel()


def _choices(dim: SearchDimension) -> tuple[Any, ...]:
    """Return a choice's values for Optuna: as parsed when all are plain, else as written."""
    plain = all(v is None or isinstance(v, bool | int | float | str) for v in dim.values)
    return dim.values if plain and len(set(dim.values)) == len(dim.values) else dim.texts


def stored_overrides(
    folder: Path, dims: Sequence[SearchDimension], fixed: Sequence[str], entry: Mapping[str, Any]
) -> tuple[str, ...]:
    """Return a stored trial's overrides, made again from the space and its ``params``.

    What ``sweep.json`` says of a trial is data Kit checks, never an override
    it runs: a co-user who can write the folder cannot plant one.

    Raises
    ------
    ConfigError
        Naming the trial and the field, when its ``params`` are not a point
        of this space or its ``overrides`` are not the ones they make.

    Examples
    --------
    >>> dims, fixed = search_space(["x=interval(0,1)", "seed=3"])
    >>> stored_overrides(Path("s"), dims, fixed, {"name": "trial-000", "params": {"x": 0.5},
    ...                  "overrides": ["x=0.5", "seed=3"]})
    ('x=0.5', 'seed=3')
    >>> stored_overrides(Path("s"), dims, fixed, {"name": "trial-000", "params": {"x": 0.5},
    ...                  "overrides": ["x=0.5", "seed=3", "+parallel.options={preload: [m]}"]})
    Traceback (most recent call last):
    ...
    kit.ConfigError: s/sweep.json: trial-000's 'overrides' is not what this search ...
    """
    name, params = entry["name"], entry.get("params")
    keys = [dim.key for dim in dims]
    if not isinstance(params, dict) or sorted(params) != sorted(keys):
        raise _tampered(folder, name, "params", f"{params!r} is not one value for each of {keys}")
    made = []
    for dim in dims:
        if not _in_space(dim, params[dim.key]):
            raise _tampered(
                folder, name, f"params.{dim.key}", f"{params[dim.key]!r} is not in the space"
            )
        made.append(_SearchPlan._override(dim, params[dim.key]))
    overrides = (*made, *fixed)
    if tuple(entry["overrides"]) != overrides:
        raise _tampered(
            folder,
            name,
            "overrides",
            f"{' '.join(entry['overrides'])!r}, where its params make {' '.join(overrides)!r}",
        )
    if isinstance(entry.get("optuna_trial", 0), bool) or not isinstance(
        entry.get("optuna_trial", 0), int
    ):
        raise _tampered(folder, name, "optuna_trial", f"{entry['optuna_trial']!r} is no number")
    return overrides


def _in_space(dim: SearchDimension, value: Any) -> bool:
    """Whether ``value`` (as JSON gave it back) is a point of ``dim``.

    Examples
    --------
    >>> dim = SearchDimension("lr", "interval", low=0.1, high=0.5)
    >>> _in_space(dim, 0.2), _in_space(dim, 0.7), _in_space(dim, "0.2"), _in_space(dim, True)
    (True, False, False, False)
    """
    if dim.kind == "choice":
        return any(type(value) is type(c) and value == c for c in _choices(dim))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if dim.integer and not isinstance(value, int):
        return False
    return bool(dim.low <= value <= dim.high)


def _tampered(folder: Path, name: str, field: str, what: str) -> Exception:
    return config_error(
        f"{folder / SweepDir.RECORD}: {name}'s {field!r} is not what this search would store: "
        f"{what}. Kit runs only trials it can make again from the search's own space, so "
        "the file was changed by hand or by another program",
        fix=f"restore {SweepDir.RECORD}, or give this search its own output_dir",
    )


def _search_record(
    folder: Path,
    overrides: list[str],
    base_hash: str,
    search: dict[str, Any],
) -> dict[str, Any]:
    stored = load_record(folder)
    if stored is None:
        return new_record(base_hash, overrides, search=search)
    was = stored.get("search")
    if not isinstance(was, dict):
        raise config_error(
            f"{folder} holds a grid sweep, not a search", fix="give the search its own output_dir"
        )
    if stored.get("overrides") != overrides:
        raise config_error(
            f"{folder} holds a search of another space: {' '.join(stored.get('overrides', []))}",
            facts={"this one": " ".join(overrides)},
            fix="search the same space to resume it, or give this one its own output_dir",
        )
    for key in ("metric", "direction"):
        if was.get(key) != search[key]:
            raise config_error(
                f"{folder} holds a search with {key} {was.get(key)!r}, not {search[key]!r}",
                fix=f"resume it with --{key} {was.get(key)}, or give this one its own output_dir",
            )
    check_base(folder, stored, base_hash)
    stored["search"] = {**was, "trials": search["trials"]}
    return dict(stored)


def submit_search(
    config: str | Path | DictConfig | dict[str, Any],
    space: Sequence[str],
    *,
    trials: int,
    metric: str,
    direction: str = "minimize",
    pruner: Any = None,
    sampler: Any = None,
    seed: int | None = 0,
    output_dir: str | Path | None = None,
    concurrency: int = CONCURRENCY,
    on_trial: TrialCallback | None = None,
    tracking: Tracking | Mapping[str, Any] | None = None,
    stop: str | None = None,
    margin: float = 0.0,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> SweepHandle:
    """Start an Optuna search of ``config`` over ``space``; return its handle.

    ``space`` uses Hydra's grammar: ``lr=interval(0.001,0.1)``,
    ``lr=tag(log, interval(1e-5,1e-1))``, ``layers=int(interval(1,8))`` (an
    integer), ``beam=1,3,5`` or ``choice(...)`` (a choice); a plain override
    applies to every trial. Optuna's sampler (default: TPE with
    ``constant_liar``, seeded) proposes ``trials`` trials, up to
    ``concurrency`` of them running at once on one session; each is scored by
    ``metric`` (the runner's summary entry, else the mean of the records'
    ``metrics[metric]``). With ``pruner`` (an Optuna pruner, e.g.
    ``optuna.pruners.MedianPruner()`` or ``WilcoxonPruner()``, which is given
    each item's value) a running trial reports the metric over its items done
    so far and stops, ``pruned``, when the pruner says so; its completed items
    are kept. The study is ``optuna.journal`` in the sweep folder; the same
    search into the same folder resumes it. ``tracking`` exports it as
    :func:`kit.submit_sweep` does. ``stop="decided"`` (instead of a
    ``pruner``) stops each trial after the first once its difference from
    the first on the per-item ``metric`` is decided, as a grid sweep's
    (:func:`kit.submit_sweep`), at ``alpha / (trials - 1)``; the study is
    told the trial's ``metric`` over the items it ran (they came in the
    search's one random order, drawn from ``seed``).

    Raises
    ------
    ImportError
        Without optuna (``pip install 'kit-lab[search]'``).
    ConfigError
        For a bad override, a space with nothing to search, or a folder
        holding another sweep or search.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> handle = submit_search(
    ...     EXAMPLE, ["model.work_seconds=interval(0,0.001)"], trials=3, metric="y",
    ...     output_dir=folder, concurrency=1)
    >>> result = handle.result(timeout=60)
    >>> [row["status"] for row in result.rows()], len(result.study.trials)
    (['completed', 'completed', 'completed'], 3)
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if stop not in (None, "decided"):
        raise ValueError(f"stop={stop!r}: the one rule is 'decided' (or None: run every item)")
    if stop is not None and pruner is not None:
        raise ValueError(
            "stop='decided' and a pruner are two rules for stopping a trial early: give one"
        )
    prepared = prepare_search(config, space, trials, metric, direction, output_dir)
    prepared.folder.mkdir(parents=True, exist_ok=True)
    study = open_study(prepared.folder, direction, sampler, pruner, seed)
    plan: Any = _SearchPlan(
        prepared.folder,
        *search_space(split_watching(space)[1]),
        trials,
        metric,
        study,
        pruner,
        prepared.record,
        prepared.summarize,
    )
    build = prepared.build
    if stop is not None:
        from kit._sweeps.decided import DecidedPlan, decided_build

        plan, build = DecidedPlan(plan, metric, bounds, margin), decided_build(build, seed or 0)
    return SweepHandle(
        SweepSpec(prepared.folder, plan, build, concurrency, prepared.record, on_trial),
        prepared.summarize,
        sweep_tracking(tracking, prepared.base),
        prepared.base,
        study=study,
    ).start()


def prepare_search(
    config: str | Path | DictConfig | dict[str, Any],
    space: Sequence[str],
    trials: int,
    metric: str,
    direction: str,
    output_dir: str | Path | None = None,
) -> Prepared:
    """Check a search whole (space, config, folder, a first trial) without running it."""
    require_optuna()  # a missing extra is named before anything else is checked
    if direction not in DIRECTIONS:
        raise config_error(
            f"direction must be minimize or maximize, not {direction!r}",
            fix="--direction minimize (lower is better) or maximize",
        )
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    watching, space = split_watching(space)
    dims, fixed = search_space(list(space))
    base = load_config(config, watching)
    folder = sweep_folder(output_dir, base)
    search = {
        "by": "optuna",
        "metric": metric,
        "direction": direction,
        "trials": trials,
        "study": SweepDir.STUDY,
    }
    record = _search_record(folder, list(space), outcome_hash(base), search)
    for entry in record["trials"]:  # refused here, before a detached driver is started
        stored_overrides(folder, dims, fixed, entry)

    # A config no trial can run fails here, before any folder is written: the
    # fixed overrides with each key's first value (or its interval's low end).
    probe = [
        f"{d.key}={d.texts[0]}" if d.kind == "choice" else _SearchPlan._override(d, d.low)
        for d in dims
    ]
    first, _ = build_runner(load_config(config, [*probe, *fixed]))

    def build(trial: Trial) -> tuple[Any, Sequence[Any]]:
        return build_runner(load_config(config, list(trial.overrides)))

    return Prepared(folder, None, record, build, first.summarize, base)


@waits_for(submit_search)
def search() -> SweepResult:
    """Run an Optuna search and wait for it (see :func:`submit_search`); Ctrl-C cancels it.

    Examples
    --------
    >>> import tempfile
    >>> result = search(EXAMPLE, ["items.stop=int(interval(2,10))"], trials=3, metric="max_y",
    ...                 direction="maximize", output_dir=tempfile.mkdtemp(), concurrency=1)
    >>> trial, best = result.best("max_y", minimize=False)
    >>> best.summary["max_y"] == result.study.best_value, result.swept
    (True, ['items.stop'])
    """
    raise NotImplementedError  # never run: waits_for makes this function
