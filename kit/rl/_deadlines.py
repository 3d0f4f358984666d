"""When an env's command counts as hung: its build, then its step, each on a clock of its own."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kit.rl._types import TIMEOUT, EnvState
from kit.rl.workers import EnvSlot


def shorter(a: float | None, b: float | None) -> float | None:
    """Return the shorter of two waits, None being no bound.

    Examples
    --------
    >>> shorter(None, 2.0), shorter(3.0, 2.0), shorter(None, None)
    (2.0, 2.0, None)
    """
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


@dataclass(frozen=True)
class Deadlines:
    """A pool's two bounds: ``build_timeout`` while an env is built, ``step_timeout`` after.

    A command's step clock starts once its env is built: a slow start-up is
    not a hang. None is no bound.

    Examples
    --------
    >>> Deadlines(step_timeout=None, build_timeout=None).clock({0: 0.0}, [], 5.0)
    ([], 5.0)
    """

    step_timeout: float | None
    build_timeout: float | None

    def left(self, worker: EnvSlot, sent_at: float) -> float | None:
        """Seconds before a command sent at ``sent_at`` counts as hung: its build, then its step."""
        if not worker.ready:
            if self.build_timeout is None:
                return None
            return max(0.0, worker.started_at + self.build_timeout - time.monotonic())
        if self.step_timeout is None:
            return None
        began = max(sent_at, worker.ready_at)
        return max(0.0, began + self.step_timeout - time.monotonic())

    def expired(self, worker: EnvSlot, sent_at: float) -> bool:
        """Whether a command sent at ``sent_at`` counts as hung now."""
        left = self.left(worker, sent_at)
        return left is not None and left <= 0

    def clock(
        self, pending: Mapping[int, float], workers: Sequence[EnvSlot], limit: float | None
    ) -> tuple[list[int], float | None]:
        """Return the slots whose time ran out, and ``limit`` cut to the next deadline."""
        if self.step_timeout is None and self.build_timeout is None:
            return [], limit
        lefts = {slot: self.left(workers[slot], sent) for slot, sent in pending.items()}
        expired = [slot for slot, left in lefts.items() if left is not None and left <= 0]
        for left in lefts.values():
            limit = shorter(limit, left)
        return expired, limit

    def timed_out(self, slot: int, worker: EnvSlot) -> EnvState:
        """Return the state a hung env's slot answers with."""
        if not worker.ready:
            error = f"env {slot} was not built within build_timeout={self.build_timeout:g} s"
        else:
            error = f"env {slot} gave no answer within step_timeout={self.step_timeout:g} s"
        return EnvState(None, status=TIMEOUT, error=error)
