"""Workers say a chunk will end early while its slow item still runs, and agree with the result."""

from __future__ import annotations

import threading
from typing import Any

from kit._engine.chunk import execute_chunk
from kit._engine.overdue import WATCH


class BlocksUntilTold:
    """A forward whose item ``slow`` returns only once the chunk's notice came."""

    def __init__(self, slow: int) -> None:
        self.slow = slow
        self.told: list[int] = []
        self.came = threading.Event()
        self.ran: list[int] = []

    def notice(self, end: int) -> None:
        self.told.append(end)
        self.came.set()

    def __call__(self, idx: int) -> int:
        self.ran.append(idx)
        if idx == self.slow:
            assert self.came.wait(30), "no notice while the slow item ran"
        return idx


def test_a_chunk_says_where_it_will_end_while_its_slow_item_runs_and_ends_there() -> None:
    forward = BlocksUntilTold(slow=12)
    chunk = execute_chunk(
        forward, {}, list(range(10, 20)), 100, None, "w", budget=0.01, notice=forward.notice
    )
    assert forward.told == [103]  # told once, with the position after the slow item
    assert chunk.stop == 103 and chunk.records == [10, 11, 12]
    assert forward.ran == [10, 11, 12]


def test_fixed_batches_say_where_they_will_end_too() -> None:
    def batch_forward(items: list[int]) -> list[int]:
        return [forward(i) for i in items]

    forward = BlocksUntilTold(slow=3)
    chunk = execute_chunk(
        batch_forward, {}, list(range(8)), 0, 2, "w", budget=0.01, notice=forward.notice
    )
    assert forward.told == [4]  # the batch [2, 3] ends the chunk
    assert chunk.stop == 4


def test_no_notice_within_the_budget_or_for_the_last_item() -> None:
    told: list[int] = []
    chunk = execute_chunk(
        lambda i: i, {}, list(range(5)), 0, None, "w", budget=60.0, notice=told.append
    )
    assert told == [] and chunk.stop == 5
    # The last item has nothing behind it to hand back: it is not watched at all.
    watched: list[Any] = []

    def forward(idx: int) -> int:
        watched.append([w.current for w in WATCH._chunks])
        return idx

    execute_chunk(forward, {}, [0, 1], 7, None, "w", budget=60.0, notice=told.append)
    # While item 0 runs, the chunk would end at 8; while the last one runs, nothing is watched.
    assert [[c and c[2] for c in now] for now in watched] == [[8], [None]]


def test_the_watching_thread_ends_with_the_last_chunk_it_watches() -> None:
    seen: list[Any] = []

    def forward(idx: int) -> int:
        seen.append(WATCH._thread)
        return idx

    execute_chunk(forward, {}, [0, 1], 0, None, "w", budget=60.0, notice=lambda end: None)
    (thread,) = set(seen)
    assert thread is not None
    thread.join(10)
    assert not thread.is_alive()
