"""Stop a sweep's trial the moment its comparison with the first trial is decided.

With ``stop="decided"``, every trial runs the same items in one shared
random order, and each trial after the first keeps a confidence sequence
(:class:`kit._trials.anytime.ConfidenceSequence`) of its per-item difference from
the first trial on the sweep's metric, at ``alpha / (trials - 1)``
(Bonferroni: the chance that any trial of the sweep is decided wrongly, at
any look, is at most ``alpha``). The sequences are looked at after every
chunk; a trial whose interval lies wholly beyond ``margin`` on one side
(better or worse), or wholly within ``(-margin, margin)`` (no difference
worth the rest of the run), is decided: its remaining chunks are cancelled,
its completed items kept, and the sweep says so ("beam=8 lower by 2.1 to 4.0
points, decided at 163 of 500 items, 67% of its items saved").
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kit._trials.anytime import ConfidenceSequence
from kit._trials.compare import item_metric
from kit._trials.trial import Trial, TrialPruned, TrialState
from kit.events import ChunkFinished
from kit.result import RunResult, RunStatus

#: How ``sweep.json`` and the rows say a decided trial: stopped by the sweep's rule.
DECIDED = TrialState.read("pruned")
#: The alpha of the whole sweep (every trial's comparison, at every look).
ALPHA = 0.05


def shared_order(items: Sequence[Any], seed: int) -> list[Any]:
    """Return ``items`` in the sweep's random order: the same for every trial of it.

    Examples
    --------
    >>> shared_order(range(6), seed=1) == shared_order(list(range(6)), seed=1)
    True
    >>> sorted(shared_order(range(6), seed=1))
    [0, 1, 2, 3, 4, 5]
    """
    order = list(items)
    random.Random(seed).shuffle(order)
    return order


def describe(trial: Trial, metric: str, low: float, high: float, seen: int, total: int) -> str:
    """Say a decision as the sweep's table shows it.

    Examples
    --------
    >>> trial = Trial(2, ("beam=8",), None)  # type: ignore[arg-type]
    >>> print(describe(trial, "wer", -0.040, -0.021, 163, 500))
    beam=8: wer lower by 0.021 to 0.04 than trial-000, decided at 163 of 500 items,
    67% of its items saved
    >>> print(describe(trial, "wer", -0.004, 0.003, 300, 500))
    beam=8: wer within 0.004 of trial-000, decided at 300 of 500 items, 40% of its items saved
    """
    name = " ".join(trial.overrides) or trial.name
    if high < 0:
        said = f"lower by {-high:.3g} to {-low:.3g}"
    elif low > 0:
        said = f"higher by {low:.3g} to {high:.3g}"
    else:
        said = f"within {max(-low, high):.3g} of"
    saved = 1 - seen / total
    return (
        f"{name}: {metric} {said}{' than' if 'within' not in said else ''} trial-000, decided "
        f"at {seen} of {total} items, {saved:.0%} of its items saved"
    )


class DecidedPlan:
    """A plan whose trials after the first stop once their comparison with it is decided.

    A grid's or a search's: a plan with ``decided(trial, result, why)`` (a
    search's) is told of each trial stopped so.

    Parameters
    ----------
    plan
        The grid's plan (trials, restore, next, ended).
    metric
        The per-item metric compared (each record's ``metrics[metric]``).
    bounds
        What every per-item value lies within.
    margin
        A difference smaller than this is no difference worth running on for.
    alpha
        The chance that any trial of the sweep is ever decided wrongly.
    """

    def __init__(
        self,
        plan: Any,
        metric: str,
        bounds: tuple[float, float] = (0.0, 1.0),
        margin: float = 0.0,
        alpha: float = ALPHA,
    ) -> None:
        self.plan = plan
        self.trials: list[Trial] = plan.trials
        self.total: int = plan.total
        self.metric, self.bounds, self.margin = metric, bounds, margin
        self.alpha = alpha / max(1, self.total - 1)
        self._lock = threading.Lock()
        #: Each trial's per-item values by position in the shared order (None: no value).
        self._values: dict[int, dict[int, float | None]] = {}
        self._sequences: dict[int, ConfidenceSequence] = {}
        self._cursor: dict[int, int] = {}
        self._handles: dict[int, Any] = {}
        self._size: int | None = None
        #: Trials whose comparison can decide nothing (an item failed, no value): run on.
        self._undecidable: set[int] = set()
        #: The decided trials, each with what the sweep says of it.
        self.decisions: dict[int, str] = {}
        #: The decided trials, each with its side of trial-000: -1 lower, 1 higher, 0 within.
        self.sides: dict[int, int] = {}

    # ------------------------------------------------------------ as a grid plan
    def restore(self) -> dict[int, tuple[RunResult, TrialState]]:
        """Return the grid's restored trials; a restored first trial's values are the baseline."""
        done: dict[int, tuple[RunResult, TrialState]] = self.plan.restore()
        if 0 in done:
            result = done[0][0]
            self._values[0] = {
                position: self._value(record) for position, record in enumerate(result.records)
            }
        return done

    def next(self) -> Trial | None:
        """Return the grid's next trial."""
        trial: Trial | None = self.plan.next()
        return trial

    def watch(self, trial: Trial, handle: Any, indices: Sequence[Any]) -> None:
        """Follow the trial's items as its chunks are stored; cancel it once decided."""
        with self._lock:
            self._size = len(indices)
            self._handles[trial.number] = handle
            self._values.setdefault(trial.number, {})
        handle.events.subscribe(lambda event: self._take(trial, handle, event))

    def ended(
        self, trial: Trial, result: RunResult | None, error: BaseException | None
    ) -> tuple[TrialState, BaseException | None]:
        """End a decided trial as the sweep's rule stopped it; others as the grid says."""
        with self._lock:
            self._handles.pop(trial.number, None)
            decision = self.decisions.get(trial.number)
        if decision is not None and result is not None and result.status == RunStatus.CANCELLED:
            told = getattr(self.plan, "decided", None)
            if told is not None:  # a search's study hears of it as a value, not a failure
                told(trial, result, decision)
            return DECIDED, TrialPruned(decision)
        ended: tuple[TrialState, BaseException | None] = self.plan.ended(trial, result, error)
        return ended

    # ------------------------------------------------------------ the comparisons
    def _value(self, record: Any) -> float | None:
        return None if record is None else item_metric(record, self.metric)

    def _take(self, trial: Trial, handle: Any, event: Any) -> None:
        if not isinstance(event, ChunkFinished):
            return
        came = handle.records_between(event.start, event.start + event.items)
        with self._lock:
            values = self._values.setdefault(trial.number, {})
            for position, record in enumerate(came, start=event.start):
                values[position] = self._value(record)
            waiting = [n for n in self._values if n != 0] if trial.number == 0 else [trial.number]
            stop = [self._advance(n) for n in waiting]
        for decided in stop:  # outside the lock: a cancel delivers events of its own
            if decided is not None:
                decided.cancel()

    def _advance(self, number: int) -> Any:
        """Feed trial ``number``'s new pairs to its sequence; return its handle once decided."""
        if number in self.decisions or number in self._undecidable or self._size is None:
            return None
        ours, first = self._values.get(number, {}), self._values.get(0, {})
        cursor = self._cursor.get(number, 0)
        pairs: list[float] = []
        while cursor in ours and cursor in first:
            a, b = first[cursor], ours[cursor]
            low, high = self.bounds
            if a is None or b is None or not (low <= a <= high and low <= b <= high):
                # A failed item, or one without a bounded value: deciding without it
                # could depend on why it failed; the trial runs on, undecided.
                self._undecidable.add(number)
                return None
            pairs.append(b - a)
            cursor += 1
        if not pairs:
            return None
        self._cursor[number] = cursor
        span = self.bounds[1] - self.bounds[0]
        sequence = self._sequences.setdefault(
            number,
            ConfidenceSequence(-span, span, alpha=self.alpha, population=self._size),
        )
        sequence.update(pairs)
        low, high = sequence.interval
        beyond = low > self.margin or high < -self.margin
        within = self.margin > 0 and -self.margin < low and high < self.margin
        if not (beyond or within) or cursor >= self._size:
            return None  # undecided, or every item seen: nothing left to save
        self.decisions[number] = describe(
            self.trials[number], self.metric, low, high, cursor, self._size
        )
        self.sides[number] = -1 if high < 0 else 1 if low > 0 else 0
        return self._handles.get(number)


def decided_build(
    build: Callable[[Trial], tuple[Any, Sequence[Any]]], seed: int
) -> Callable[[Trial], tuple[Any, Sequence[Any]]]:
    """Wrap a sweep's ``build``: every trial's items in the sweep's one random order."""
    first: list[Any] = []

    def shuffled(trial: Trial) -> tuple[Any, Sequence[Any]]:
        runner, items = build(trial)
        items = list(items)
        if not first:
            first.append(sorted(map(repr, items)))
        elif sorted(map(repr, items)) != first[0]:
            from kit.config._errors import error

            raise error(
                f"{trial.name} runs other items than trial-000; stop='decided' compares each "
                "trial with the first over the same items",
                fix="sweep keys other than the items (items.stop, items.start)",
            )
        return runner, shared_order(items, seed)

    return shuffled
