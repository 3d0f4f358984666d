"""The commander: turn the learner's progress into the next collection's arguments.

DI-engine's serial commander in a few lines: :meth:`Commander.step` reads
``learner.learn_info`` and ``collector.envstep`` and returns keyword
arguments for ``collector.collect`` (for instance an exploration epsilon).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Commander", "linear_schedule"]

Schedule = Callable[[int], float]


def linear_schedule(start: float, end: float, steps: int) -> Schedule:
    """Return ``f(t)`` going from ``start`` to ``end`` over ``steps``, then staying at ``end``.

    Examples
    --------
    >>> eps = linear_schedule(1.0, 0.1, 100)
    >>> eps(0), eps(50), eps(1000)
    (1.0, 0.55, 0.1)
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")

    def value(t: int) -> float:
        if t >= steps:
            return end
        return start + (end - start) * max(0, t) / steps

    return value


class Commander:
    """Make collection arguments from schedules over env steps or training iterations.

    Parameters
    ----------
    learner
        Anything with ``learn_info`` (a :class:`kit.rl.Learner`).
    collector
        Anything with ``envstep`` (a collector).
    schedules
        ``{name: schedule}``: each policy keyword argument and the function
        of time that sets it.
    by
        ``"envstep"`` or ``"train_iter"``: the time the schedules read.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> learner = SimpleNamespace(learn_info={"train_iter": 10})
    >>> collector = SimpleNamespace(envstep=500)
    >>> commander = Commander(learner, collector, {"eps": linear_schedule(1.0, 0.0, 1000)})
    >>> commander.step()
    {'policy_kwargs': {'eps': 0.5}}
    """

    def __init__(
        self,
        learner: Any,
        collector: Any,
        schedules: dict[str, Schedule],
        by: str = "envstep",
    ) -> None:
        if by not in ("envstep", "train_iter"):
            raise ValueError(f"by must be 'envstep' or 'train_iter', got {by!r}")
        self.learner = learner
        self.collector = collector
        self.schedules = dict(schedules)
        self.by = by

    def step(self) -> dict[str, Any]:
        """Return ``{"policy_kwargs": {...}}`` for the next ``collect`` call."""
        if self.by == "envstep":
            t = int(self.collector.envstep)
        else:
            t = int(self.learner.learn_info.get("train_iter", 0))
        return {"policy_kwargs": {name: f(t) for name, f in self.schedules.items()}}
