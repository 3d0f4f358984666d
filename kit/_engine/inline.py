"""Run chunks one after another in this process (``parallel.env: inline``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from kit._engine.chunk import execute_chunk
from kit._engine.plan import ChunkPlanner
from kit._engine.spec import ChunkJob
from kit.store._chunk_result import ChunkResult

#: Chunks that finish within this many seconds of the first one not yet stored are
#: stored together, in one commit: each commit waits for the disk (fsync) a few
#: times, which would otherwise cost more than a chunk of quick items.
COMMIT_WINDOW = 0.05


class InlineDispatcher:
    """Hand the planner's chunks to ``forward`` on the calling thread.

    ``forward`` runs in this thread, so a debugger stops inside it. Quick
    chunks that finish within :data:`COMMIT_WINDOW` of each other are handed
    back together; a chunk that takes longer, or has a failed item (it may
    stop the run), is handed back at once.
    """

    def __init__(
        self,
        job: ChunkJob,
        env: dict[str, Any],
        planner: ChunkPlanner,
        complete: Callable[[Sequence[ChunkResult]], None],
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
        held: list[ChunkResult] = []
        since = 0.0
        try:
            while not self.should_stop():
                span = self.planner.next()
                if span is None:
                    return
                chunk = self._execute(*span)
                self.planner.observe(len(chunk.records), chunk.busy_seconds)
                if not held:
                    since = time.perf_counter()
                held.append(chunk)
                # Hold it only if the next chunk, expected to take as long as this one,
                # still ends within the window: a slow chunk is never kept waiting.
                waited = time.perf_counter() - since + chunk.busy_seconds
                if chunk.errors or waited >= COMMIT_WINDOW:
                    held, ready = [], held
                    self.complete(ready)
        finally:
            if held:  # done, stopped or interrupted: what ran is kept
                self.complete(held)

    def _execute(self, start: int, stop: int) -> ChunkResult:
        job = self.job
        return execute_chunk(
            job.forward,
            self.kwargs,
            job.indices[start:stop],
            start,
            job.batch_size,
            "driver",
            job.batch_by,
            self.env,
        )
