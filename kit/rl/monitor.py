"""Training progress as Kit events, so the Kit dashboard draws return curves live."""

from __future__ import annotations

import time
import uuid
from typing import Any

from kit.events import ChunkFinished, EventStream, RunFinished, RunStarted, Scalars
from kit.result import RunStatus


class TrainingLog:
    """Emit a training loop's progress as events: iterations done and logged values.

    Follow it with a dashboard (``kit.dashboard.Dashboard().follow(log)``,
    or ``widgets.show_dashboard(log)`` in a notebook): progress counts
    iterations, and every value given to :meth:`log` becomes a curve over
    iterations. It is an ordinary event stream: subscribe anything.

    Examples
    --------
    >>> log = TrainingLog(total=3, name="cartpole")
    >>> seen = []
    >>> _ = log.events.subscribe(seen.append)
    >>> log.log(1, eval_return=20.0)
    >>> log.finish({"best_return": 20.0})
    >>> [type(e).__name__ for e in seen]
    ['RunStarted', 'ChunkFinished', 'Scalars', 'RunFinished']
    """

    def __init__(self, total: int, name: str = "training") -> None:
        self.total = total
        self.run_id = f"{name}-{uuid.uuid4().hex[:8]}"
        self.events = EventStream()
        self.done = 0
        self._started: float | None = None

    def start(self) -> None:
        """Start the training's clock now (the first :meth:`log` does, if this was not called).

        A training that sets things up before its first logged value calls it
        first, so the dashboard's "took" is the training's whole time.
        """
        if self._started is None:
            self._started = time.perf_counter()
            self.events.emit(RunStarted(self.run_id, self.total, 0, 1, None, time.time()))

    def _elapsed(self) -> float:
        self.start()
        assert self._started is not None
        return time.perf_counter() - self._started

    def log(self, step: int, **values: float) -> None:
        """Record values (returns, losses...) at ``step``: the number of iterations done."""
        elapsed = self._elapsed()
        if step > self.done:  # several log() calls for one step count it once
            self.done = min(step, self.total)
            self.events.emit(
                ChunkFinished(
                    self.run_id, step, 1, 0, "learner", 0.0, elapsed, self.done, 0, self.total
                )
            )
        if values:
            clean = {k: float(v) for k, v in values.items()}
            self.events.emit(Scalars(self.run_id, step, clean, elapsed))

    def finish(self, summary: dict[str, Any] | None = None, status: str = "completed") -> None:
        """Mark the training ended (the dashboard stops redrawing).

        ``total`` is a budget: a training that completes early (solved at
        iteration 20 of at most 200) is complete, and reads "20/20", not 10%.
        """
        elapsed = self._elapsed()
        final = RunStatus(status)
        total = self.done if final is RunStatus.COMPLETED else self.total
        self.events.emit(
            RunFinished(self.run_id, final, self.done, 0, total, elapsed, dict(summary or {}))
        )
