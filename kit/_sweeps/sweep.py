"""Sweeps: a grid's trials run side by side on one session, stored as run folders, resumed.

A sweep folder holds ``sweep.json`` (the base overrides, the trials and their
states, written by the sweep's driver alone, through a rename) and one
ordinary run folder per trial (``trial-000``...): ``kit.attach``, ``kit
status`` and the reports work on each trial unchanged. Running the same
sweep into the same folder again runs only what is missing: finished trials
are read back, not run; half-finished ones resume at chunk level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit._base.errors import KitError
from kit._from_config import build_runner
from kit._sweeps.driving import SweepDriver, SweepSpec, SweepState, check_trial_folder
from kit._sweeps.joined import waits_for
from kit._trials.record import check_base, new_record, read_record
from kit._trials.trial import (
    BuildTrial,
    SweepResult,
    Trial,
    TrialCallback,
    TrialPlan,
    TrialState,
    follow_trials,
)
from kit.config import load_config
from kit.config._api import outcome_hash
from kit.config._errors import error
from kit.config._sweeps import expand_sweep
from kit.result import Progress, RunResult, RunStatus
from kit.store._results import read_result
from kit.store._rundir import SweepDir
from kit.tracking import Tracking
from kit.tracking._sweep import SweepTracker

#: Trials running at once, at most, by default: enough to keep a cluster busy.
CONCURRENCY = 8

#: The quickstart model, inline, as a config ``kit run`` takes (the examples' sweeps).
EXAMPLE = {
    "provider": {"_target_": "kit.examples.quickstart.ModelProvider"},
    "runner": {"_target_": "kit.examples.quickstart.Evaluate"},
    "model": {"coefficients": [0.0, 1.0], "work_seconds": 0.0},
    "items": {"start": 0, "stop": 10},
    "parallel": {"env": "inline"},
}


#: A trial whose run completed.
COMPLETED = TrialState(RunStatus.COMPLETED)


class SweepHandle:
    """A sweep going on in the background: its trials' handles, progress, result, cancel.

    Made by :func:`submit_sweep` (a grid) or :func:`kit.submit_search` (an
    Optuna search). Up to ``concurrency`` trials run at once on one session
    (the same ``parallel`` section, so one cluster), their chunks interleaved
    by the scheduler; the next trial starts as soon as one ends.

    Examples
    --------
    >>> import tempfile
    >>> handle = submit_sweep(EXAMPLE, ["items.stop=5,10"], output_dir=tempfile.mkdtemp())
    >>> [r.stats.ok for r in handle.result(timeout=60).results]
    [5, 10]
    >>> print(handle.progress)
    2/2 trials done, 0 running
    """

    def __init__(
        self,
        spec: SweepSpec,
        summarize: Callable[[list[Any]], dict[str, Any]] | None = None,
        tracking: Tracking | None = None,
        base: DictConfig | None = None,
        *,
        study: Any = None,
    ) -> None:
        self.folder = spec.folder
        self._study = study
        self._plan = spec.plan
        self.summarize = summarize
        self.concurrency = spec.concurrency
        #: Where the sweep is exported to (its trials nested under it), or None.
        self.tracking = tracking
        self._state = SweepState()
        overrides = list(spec.record.get("overrides", []))
        tracker = (
            SweepTracker(tracking, spec.folder, overrides, base) if tracking is not None else None
        )
        self._driver = SweepDriver(spec, self._state, self.partial, tracker)

    @property
    def handles(self) -> dict[int, Any]:
        """The run handles of the trials started so far, by trial number."""
        return self._state.handles

    def start(self) -> SweepHandle:
        """Take the sweep folder's lock, start the first trials; return self.

        Raises
        ------
        StoreError
            If another process drives a sweep in the folder (it holds the lock).
        """
        self._driver.start()
        return self

    @property
    def trials(self) -> list[Trial]:
        """The sweep's trials so far (a search adds them as it asks)."""
        return list(self._plan.trials)

    @property
    def decided(self) -> dict[int, int]:
        """With ``stop='decided'``, the trials stopped once decided, and their side of the first.

        By trial number: -1 its metric lower than trial-000's, 1 higher, 0
        within the margin of it (empty for other sweeps).
        """
        return dict(getattr(self._plan, "sides", {}))

    @property
    def study(self) -> Any:
        """A search's ``optuna.Study`` (None for a grid)."""
        return self._study

    # -------------------------------------------------------------- reading
    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._state.cancelled

    def done(self) -> bool:
        """Whether every trial has ended (or the sweep was cancelled and its trials stopped)."""
        return self._state.finished.is_set()

    @property
    def status(self) -> RunStatus:
        """``running`` until the sweep ends; then ``completed``, or ``cancelled`` if it was.

        A trial's own end is in its row (:meth:`rows`), not here.
        """
        if not self.done():
            return RunStatus.RUNNING
        return RunStatus.CANCELLED if self._state.cancelled else RunStatus.COMPLETED

    def __iter__(self) -> Iterator[tuple[Trial, RunResult | None]]:
        """Yield each trial with its result (None if it gave none) as it ends."""
        return follow_trials(self.partial, self.done)

    @property
    def progress(self) -> Progress:
        """Trials done (failed among them), running and in all; ``cancelled`` once asked."""
        with self._state.lock:
            done = len(self._state.results.keys() | self._state.errors.keys())
            status = RunStatus.CANCELLED if self._state.cancelled else self.status
            return Progress(
                done,
                len(self._state.errors),
                self._plan.total,
                status,
                running=self._state.running,
                unit="trials",
            )

    def rows(self) -> list[dict[str, Any]]:
        """One row per trial so far, as it stands now: what a live table shows.

        Ended trials are as in :meth:`SweepResult.rows`; a running one says
        ``running`` with its items ``done`` so far (``12/50``), a waiting one
        ``pending``.

        Examples
        --------
        >>> import tempfile
        >>> handle = submit_sweep(EXAMPLE, ["items.stop=2,3"], output_dir=tempfile.mkdtemp())
        >>> _ = handle.result(timeout=60)
        >>> [(row["items.stop"], row["status"], row["done"]) for row in handle.rows()]
        [('2', 'completed', '2/2'), ('3', 'completed', '3/3')]
        """
        with self._state.lock:
            handles = dict(self._state.handles)
        ended = self.partial()  # after: a trial ended in between reads as ended
        live = []
        for row, trial, result in zip(ended.rows(), ended.trials, ended.results, strict=True):
            if result is not None:
                done = f"{result.stats.ok + result.stats.failed}/{len(result.indices)}"
            elif trial.number in ended.errors:
                done = None
            elif trial.number in handles:
                progress = handles[trial.number].progress
                row.update(status=RunStatus.RUNNING.value, failed=progress.failed, error=None)
                done = f"{progress.done}/{progress.total}"
            else:
                row.update(status=TrialState().word, error=None)
                done = None
            # Trial, swept values, status and items done first: what a live table reads.
            first = ["trial", *ended.swept, "status"]
            ordered = {key: row.get(key) for key in first}
            ordered["done"] = done
            ordered.update((k, v) for k, v in row.items() if k not in ordered and v is not None)
            live.append(ordered)
        return live

    def result(self, timeout: float | None = None) -> SweepResult:
        """Wait for the sweep to end and return its :class:`SweepResult`."""
        if not self._state.finished.wait(timeout):
            raise TimeoutError(f"the sweep did not end within {timeout} s: {self.progress}")
        return self.partial()

    def join(self) -> SweepResult:
        """Wait for the sweep to end and return its result; Ctrl-C cancels it, then re-raises.

        Cancelled, the running trials keep their completed chunks: the same
        sweep again resumes them.
        """
        try:
            return self.result()
        except KeyboardInterrupt:
            self.cancel()
            self.result(timeout=60)
            raise

    def partial(self) -> SweepResult:
        """Return the sweep as it stands, without waiting: the trials ended so far have results."""
        with self._state.lock:
            trials = list(self._plan.trials)
            results = [self._state.results.get(t.number) for t in trials]
            errors, statuses = dict(self._state.errors), dict(self._state.statuses)
            notes = dict(self._state.notes)
        return SweepResult(
            trials,
            results,
            errors,
            self.summarize,
            statuses=statuses,
            study=self.study,
            notes=notes,
        )

    def cancel(self, timeout: float = 0.0) -> None:
        """Start no more trials and cancel the running ones; completed items are kept.

        With a ``timeout``, wait up to that many seconds for the sweep to end
        (as :meth:`kit.detached.DetachedSweep.cancel` does); by default return at once.
        A sweep that has ended stays as it ended.
        """
        with self._state.lock:
            if self._state.finished.is_set():
                return
            self._state.cancelled = True
            running = list(self._state.handles.values())
        for handle in running:
            handle.cancel()
        self._driver.launch()
        if timeout > 0:
            self._state.finished.wait(timeout)


class _Grid:
    """A grid's trials, all known at the start."""

    def __init__(self, trials: list[Trial], record: dict[str, Any]) -> None:
        self.trials = trials
        self.total = len(trials)
        self._record = record
        self._next = 0

    def restore(self) -> dict[int, tuple[RunResult, TrialState]]:
        done = {}
        for trial in self.trials:
            if TrialState.read(self._record["trials"][trial.number]["status"]) == COMPLETED:
                stored = read_stored(trial)
                if stored is not None and stored.status == RunStatus.COMPLETED:
                    done[trial.number] = (stored, COMPLETED)
        return done

    def next(self) -> Trial | None:
        if self._next >= len(self.trials):
            return None
        self._next += 1
        return self.trials[self._next - 1]

    def watch(self, trial: Trial, handle: Any, indices: Sequence[Any]) -> None:
        pass

    def ended(
        self, trial: Trial, result: RunResult | None, error: BaseException | None
    ) -> tuple[TrialState, BaseException | None]:
        return TrialState.ended(result), error


def submit_sweep(
    config: str | Path | DictConfig | dict[str, Any],
    overrides: Sequence[str],
    *,
    output_dir: str | Path | None = None,
    concurrency: int = CONCURRENCY,
    on_trial: TrialCallback | None = None,
    metric: str | None = None,
    minimize: bool = True,
    build: BuildTrial | None = None,
    tracking: Tracking | Mapping[str, Any] | None = None,
    stop: str | None = None,
    margin: float = 0.0,
    bounds: tuple[float, float] = (0.0, 1.0),
    seed: int = 0,
) -> SweepHandle:
    """Start a grid sweep of ``config`` over ``overrides`` in the background; return its handle.

    ``config`` is what ``kit run`` takes (a YAML path, a dict or a DictConfig
    with ``provider``, ``runner`` and ``items`` sections). ``overrides`` use
    Hydra's sweep grammar: ``decoder.beam_size=1,3,5``, ``range(1,4)``,
    ``choice(a,b)``; the trials are the product of the swept keys, and a plain
    override applies to every trial. Each trial is a run folder under
    ``output_dir`` (default: the config's ``output_dir``). The same sweep into
    the same folder again runs only what is missing; a different one is refused.
    ``on_trial(trial, result, error)`` is called (on a run's thread) as each
    trial ends. ``metric`` (lower is better, unless ``minimize=False``) is
    the one the sweep's ``report.html`` judges the trials by, written as the
    sweep ends (with bokeh installed); by default the first number in the
    trials' summaries. ``build(cfg)`` makes a trial's runner and items from
    its config (default: as ``kit run`` does, from the config's ``provider``,
    ``runner`` and ``items`` sections); the runners it makes should share
    one ``parallel`` section, so that the trials share one cluster.
    ``tracking`` (default: the config's ``tracking`` section) exports the
    sweep as it goes: an MLflow parent run with a run nested per trial, and
    a TensorBoard HParams experiment (see :class:`kit.tracking.Tracking`).
    ``stop="decided"`` runs every trial's items in one random order (drawn
    from ``seed``) and stops each trial after the first once its difference
    from the first on the per-item ``metric`` (within ``bounds``) is decided
    beyond ``margin``, or within it, by an interval valid at every look
    (:mod:`kit._sweeps.decided`); its completed items are kept.

    Raises
    ------
    ConfigError
        For a bad override, or a folder holding another sweep (the message
        shows the difference).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> first = submit_sweep(EXAMPLE, ["items.stop=4,8"], output_dir=folder).result(timeout=60)
    >>> again = submit_sweep(EXAMPLE, ["items.stop=4,8"], output_dir=folder)
    >>> [r.stats.ok for r in again.result(timeout=60).results], sorted(again.handles)
    ([4, 8], [])
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if stop not in (None, "decided"):
        raise ValueError(f"stop={stop!r}: the one rule is 'decided' (or None: run every item)")
    if stop is not None and metric is None:
        raise ValueError("stop='decided' compares trials on a per-item metric: give metric=")
    prepared = prepare_grid(config, overrides, output_dir, build)
    assert prepared.plan is not None  # a grid's
    if metric is not None:
        prepared.record["metric"] = metric
        prepared.record["direction"] = "minimize" if minimize else "maximize"
    plan, build_trial = prepared.plan, prepared.build
    if stop is not None:
        from kit._sweeps.decided import DecidedPlan, decided_build

        assert metric is not None  # checked above
        plan = DecidedPlan(plan, metric, bounds, margin)
        build_trial = decided_build(build_trial, seed)
    prepared.folder.mkdir(parents=True, exist_ok=True)
    return SweepHandle(
        SweepSpec(prepared.folder, plan, build_trial, concurrency, prepared.record, on_trial),
        prepared.summarize,
        sweep_tracking(tracking, prepared.base),
        prepared.base,
    ).start()


def sweep_tracking(
    given: Tracking | Mapping[str, Any] | None, base: DictConfig | None
) -> Tracking | None:
    """Return the sweep's tracking: as given, else as its base config's ``tracking`` says."""
    if given is not None:
        return Tracking.of(given)
    return Tracking.of(base.get("tracking")) if base is not None else None


@dataclass
class Prepared:
    """A sweep checked and ready to start: its folder, plan, record and how to build a trial."""

    folder: Path
    #: A grid's trials; None for a search, whose study only its driver opens.
    plan: TrialPlan | None
    record: dict[str, Any]
    build: Callable[[Trial], tuple[Any, Sequence[Any]]]
    summarize: Callable[[list[Any]], dict[str, Any]] | None
    #: The sweep's base config.
    base: DictConfig | None = None


def prepare_grid(
    config: str | Path | DictConfig | dict[str, Any],
    overrides: Sequence[str],
    output_dir: str | Path | None,
    make: BuildTrial | None = None,
) -> Prepared:
    """Check a grid sweep whole (overrides, config, folder, a first trial) without running it."""
    watching, overrides = split_watching(overrides)
    grid = expand_sweep(list(overrides))
    base = load_config(config, watching)  # checked once, whole, before any trial
    folder = sweep_folder(output_dir, base)
    trials = [
        Trial(number, tuple(trial), SweepDir(folder).trial(number).path)
        for number, trial in enumerate(grid)
    ]
    record = _record_for(folder, list(overrides), trials, outcome_hash(base))
    # In the order the folder holds them (a shuffle() grid is drawn anew each time):
    # the same trials, each in its own folder again. They are this command line's.
    trials = [
        Trial(number, tuple(entry["overrides"]), SweepDir(folder).trial(number).path)
        for number, entry in enumerate(record["trials"])
    ]

    built: dict[int, tuple[Any, Sequence[Any]]] = {}

    def build(trial: Trial) -> tuple[Any, Sequence[Any]]:
        if trial.number in built:
            return built.pop(trial.number)
        return (make or build_runner)(load_config(config, list(trial.overrides)))

    # A config no trial can run fails here, before any folder is written.
    built[0] = build(trials[0])
    return Prepared(folder, _Grid(trials, record), record, build, built[0][0].summarize, base)


def split_watching(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split the ``tracking`` overrides (where the sweep is watched from) from the others.

    They go to the sweep's base config, not into every trial's overrides: a
    sweep resumed with tracking turned on is the same sweep.

    Examples
    --------
    >>> split_watching(["beam=1,5", "tracking.mlflow=true", "+tracking.experiment=asr"])
    (['tracking.mlflow=true', '+tracking.experiment=asr'], ['beam=1,5'])
    """
    watching: list[str] = []
    others: list[str] = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        (watching if key.split(".", 1)[0] == "tracking" else others).append(override)
    return watching, others


@waits_for(submit_sweep)
def sweep() -> SweepResult:
    """Run a grid sweep and wait for it (see :func:`submit_sweep`); Ctrl-C cancels it.

    Examples
    --------
    >>> import tempfile
    >>> result = sweep(EXAMPLE, ["items.stop=3,6"], output_dir=tempfile.mkdtemp())
    >>> result, [len(r.records) for r in result.results]
    (SweepResult(trials=2, completed=2, errors=0), [3, 6])
    """
    raise NotImplementedError  # never run: waits_for makes this function


def sweep_folder(output_dir: str | Path | None, base: DictConfig | None) -> Path:
    """Return the sweep's folder: ``output_dir``, else the base config's; never a file.

    Examples
    --------
    >>> import tempfile
    >>> sweep_folder(tempfile.mktemp(), base=None).exists()
    False
    >>> sweep_folder(tempfile.mkstemp()[1], base=None)
    Traceback (most recent call last):
    ...
    kit.ConfigError: output_dir: .../tmp... is a file, not a folder for the sweep's trials
    ...
    """
    if output_dir is None:
        output_dir = base.get("output_dir") if base is not None else None
        if not isinstance(output_dir, str) or not output_dir:
            raise error(
                "a sweep needs a folder for its trials",
                full_key="output_dir",
                fix="set output_dir in the config, or pass output_dir=... (`-o` on the "
                "command line)",
            )
    folder = Path(output_dir).expanduser()
    if folder.exists() and not folder.is_dir():
        raise error(
            f"{folder} is a file, not a folder for the sweep's trials",
            full_key="output_dir",
            fix="give the sweep a folder (`-o runs/my-sweep`); it is made if missing",
        )
    return folder


def load_record(folder: Path) -> dict[str, Any] | None:
    """Return the sweep record in ``folder``, or None for a new sweep (an empty or new folder)."""
    path = SweepDir(folder).record
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise KitError(f"{path} is not a regular file: a sweep folder's record must be one")
    if not path.exists():
        if folder.is_dir() and any(p.name not in SweepDir.NAMES for p in folder.iterdir()):
            raise error(
                f"{folder} holds files but no {SweepDir.RECORD}: not a sweep folder",
                fix="give the sweep a folder of its own (output_dir=...)",
            )
        return None
    stored = read_record(folder)
    for number in range(len(stored["trials"])):
        check_trial_folder(SweepDir(folder).trial(number).path)
    return stored


def _record_for(
    folder: Path, overrides: list[str], trials: list[Trial], base_hash: str
) -> dict[str, Any]:
    """Return the sweep's record: the one in ``folder`` if it is this sweep, else a new one."""
    stored = load_record(folder)
    if stored is None:
        pending = TrialState().word
        return new_record(base_hash, overrides, [(t.name, t.overrides, pending) for t in trials])
    if stored.get("search"):
        raise error(
            f"{folder} holds a search, not a grid sweep",
            fix="run it with its search options to resume it (`--search optuna ...`), "
            "or give this grid its own output_dir",
        )
    was = [tuple(t["overrides"]) for t in stored["trials"]]
    now = [t.overrides for t in trials]
    if sorted(was) != sorted(now):  # the same trials in another order: shuffle(), resumed
        gone = [" ".join(t) for t in was if t not in now][:3]
        new = [" ".join(t) for t in now if t not in was][:3]
        raise error(
            f"{folder} holds another sweep ({len(was)} trials; this one has {len(now)})",
            facts={"only there": gone or "nothing", "only here": new or "nothing"},
            fix="run the same sweep to resume it, or give this one its own output_dir",
        )
    check_base(folder, stored, base_hash)
    stored.pop("metric", None)  # judged as this run of the sweep says
    stored.pop("direction", None)
    for entry in stored["trials"]:
        if TrialState.read(entry.get("status")) != COMPLETED:
            entry["status"] = TrialState().word  # was running when the driver stopped: resumed
    return dict(stored)


def read_stored(trial: Trial) -> RunResult | None:
    """Return a trial's stored result, or None when its folder holds none Kit can read."""
    if trial.output_dir.is_symlink():
        return None
    try:
        return read_result(trial.output_dir)
    except (OSError, KitError, ValueError):
        return None
