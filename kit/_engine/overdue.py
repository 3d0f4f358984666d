"""Say, while an item still runs, that it ran past its budget: its chunk will end with it.

A chunk ends after an item that alone ran longer than its budget, and hands
back the items behind it (see :func:`kit._engine.chunk.execute_chunk`). Told only
when the chunk returns, the driver would plan those items again after the
slow item finished: they would wait for it, on a worker that cannot run them,
while other workers idle at the end of a run. One daemon thread per process
watches the items of the chunks running there and calls a chunk's ``notice``
with the position where it will end as soon as its item passes the budget;
the driver plans the rest at once. The thread ends when no chunk is left to
watch.

The decision is the chunk's own, so the notice never disagrees with the
result: both compare ``perf_counter() - began`` with the same ``budget``, and
a later reading only grows.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

#: At most this long (s) between two looks at the watched items; a notice comes that
#: much after the budget at worst.
STEP = 0.02


class Watched:
    """One chunk under watch: its item's ``(began, budget, end)``, None between items."""

    __slots__ = ("budget", "current", "notice", "told")

    def __init__(self, notice: Callable[[int], None], budget: float) -> None:
        self.notice = notice
        self.budget = budget
        self.current: tuple[float, float, int] | None = None
        self.told = -1  # the last ``end`` told, so each is told once

    def item(self, began: float, end: int) -> None:
        """Watch the item that began at ``began``; past the budget, the chunk ends at ``end``."""
        self.current = (began, self.budget, end)


class OverdueWatch:
    """Call ``notice(end)`` once when a watched item runs longer than its budget.

    Examples
    --------
    >>> told = []
    >>> watch = OverdueWatch()
    >>> with watch.chunk(told.append, budget=0.0) as chunk:
    ...     chunk.item(time.perf_counter(), end=5)
    ...     while not told:
    ...         time.sleep(0.001)
    >>> told
    [5]
    """

    def __init__(self, step: float = STEP) -> None:
        self.step = step
        self._lock = threading.Lock()
        self._chunks: set[Watched] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def chunk(self, notice: Callable[[int], None], budget: float) -> Iterator[Watched]:
        """Watch one chunk's items while the block runs (call ``item`` for each)."""
        watched = Watched(notice, budget)
        with self._lock:
            self._chunks.add(watched)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="kit-overdue", daemon=True)
                self._thread.start()
        try:
            yield watched
        finally:
            watched.current = None
            with self._lock:
                self._chunks.discard(watched)
                if not self._chunks:
                    self._wake.set()  # so the thread sees it has nothing left and ends

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._chunks:
                    self._thread = None
                    self._wake.clear()
                    return
                chunks = list(self._chunks)
            now = time.perf_counter()
            wait = self.step
            for watched in chunks:
                current = watched.current
                if current is None:
                    continue
                began, budget, end = current
                if now - began > budget:
                    if watched.told != end:
                        watched.told = end
                        with contextlib.suppress(Exception):  # the chunk's result still says it
                            watched.notice(end)
                else:
                    wait = min(wait, began + budget - now)
            self._wake.wait(max(wait, 0.001))
            self._wake.clear()


#: The one watcher of this process (its thread runs only while chunks are watched).
WATCH = OverdueWatch()
