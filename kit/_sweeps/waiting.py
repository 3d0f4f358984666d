"""A sweep's trials in the plan's order, save one that would redo what a running trial makes.

Trials alike in forward and env (a sweep over normalisers at one beam)
share forward outputs (:mod:`kit._reuse`), but only once one of them has
stored them: run at once, each would compute all of its items. So a
trial whose group has a trial running waits for it to end, and the next
free trial goes first; a sweep of 4 beams by 3 normalisers calls forward
4 times per item.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Final

from kit._reuse import plan_of
from kit._trials.trial import Trial
from kit.launch import RunRequest


class _Waiting:
    def __repr__(self) -> str:
        return "WAITING"


#: What :meth:`ReuseQueue.next` returns when every trial left waits on a running one.
WAITING: Final = _Waiting()


def reuse_group(request: RunRequest) -> str | None:
    """Return what ``request``'s run shares outputs by (forward and env); None: it shares none."""
    plan = plan_of(
        request.task, request.provider, request.options, request.config, request.output_dir
    )
    return None if plan is None else plan.group()


class ReuseQueue:
    """The trials to start: waiting ones whose group is free first, then the plan's next.

    ``group_of(trial)`` says a trial's group (None: it waits on none). Call
    :meth:`started` as a trial starts and :meth:`ended` as it ends.

    Examples
    --------
    >>> from pathlib import Path
    >>> trials = iter([Trial(n, (f"beam={n // 2}",), Path(f"t{n}")) for n in range(4)])
    >>> queue = ReuseQueue(lambda trial: trial.overrides[0])
    >>> first = queue.next(lambda: next(trials, None)); queue.started(first)
    >>> second = queue.next(lambda: next(trials, None)); queue.started(second)
    >>> first.number, second.number, queue.next(lambda: next(trials, None))
    (0, 2, WAITING)
    >>> queue.ended(first); queue.next(lambda: next(trials, None)).number
    1
    """

    def __init__(self, group_of: Callable[[Trial], str | None]) -> None:
        self.group_of = group_of
        self.waiting: list[Trial] = []
        self.busy: Counter[str] = Counter()
        self.groups: dict[int, str | None] = {}
        #: The plan has no trial left (or could not make one).
        self.drained = False

    def next(self, pull: Callable[[], Trial | None]) -> Trial | _Waiting | None:
        """Return the next trial to start, WAITING, or None when none is left anywhere."""
        for trial in self.waiting:
            if self._free(trial):
                self.waiting.remove(trial)
                return trial
        while not self.drained:
            try:
                pulled = pull()
            except Exception:
                self.drained = True
                raise
            if pulled is None:
                self.drained = True
            elif self._free(pulled):
                return pulled
            else:
                self.waiting.append(pulled)
        return WAITING if self.waiting else None

    def started(self, trial: Trial) -> None:
        """Mark ``trial``'s group busy until :meth:`ended`."""
        group = self._group(trial)
        if group is not None:
            self.busy[group] += 1

    def ended(self, trial: Trial) -> None:
        """Free ``trial``'s group (once no other trial of it runs)."""
        group = self._group(trial)
        if group is not None and self.busy[group] > 0:
            self.busy[group] -= 1

    def _group(self, trial: Trial) -> str | None:
        if trial.number not in self.groups:
            try:
                self.groups[trial.number] = self.group_of(trial)
            except Exception:  # a trial that cannot be built: its start fails, saying why
                self.groups[trial.number] = None
        return self.groups[trial.number]

    def _free(self, trial: Trial) -> bool:
        group = self._group(trial)
        return group is None or self.busy[group] == 0
