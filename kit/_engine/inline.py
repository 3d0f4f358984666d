"""Run chunks one after another in this process (``parallel.env: inline``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kit._chunk import ChunkResult, execute_chunk
from kit._engine.spec import ChunkJob
from kit._plan import ChunkPlanner


class InlineDispatcher:
    """Hand the planner's chunks to ``forward`` on the calling thread.

    ``forward`` runs in this thread, so a debugger stops inside it.
    """

    def __init__(
        self,
        job: ChunkJob,
        env: dict[str, Any],
        planner: ChunkPlanner,
        complete: Callable[[ChunkResult], None],
        should_stop: Callable[[], bool],
    ) -> None:
        self.job = job
        self.kwargs = job.forward_spec.kwargs(env, job.explicit)
        self.env = env
        self.planner = planner
        self.complete = complete
        self.should_stop = should_stop

    def run(self) -> None:
        """Run until every chunk is done or the run must stop."""
        job = self.job
        while not self.should_stop():
            span = self.planner.next()
            if span is None:
                return
            start, stop = span
            chunk = execute_chunk(
                job.forward,
                self.kwargs,
                job.indices[start:stop],
                start,
                job.batch_size,
                "driver",
                job.batch_by,
                self.env,
            )
            self.planner.observe(len(chunk.records), chunk.busy_seconds)
            self.complete(chunk)
