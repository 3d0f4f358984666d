"""The ledger alone, without Dask: exactly-once acceptance, counters, stop policy, results."""

from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st

from kit._engine.ledger import Ledger, StopPolicy
from kit.result import ItemError, RunStatus
from kit.store._chunk_result import ChunkResult


def error(pos: int) -> ItemError:
    return ItemError(pos, pos, "builtins.ValueError", f"bad {pos}", "tb", "w")


def chunk(start: int, stop: int, worker: str = "w", failed: tuple[int, ...] = ()) -> ChunkResult:
    records = [None if p in failed else p * 10 for p in range(start, stop)]
    return ChunkResult(start, records, [error(p) for p in failed], worker, 0.1)


def test_a_position_counts_once_however_often_it_comes_back() -> None:
    ledger = Ledger(range(6), StopPolicy())
    assert ledger.accept(chunk(0, 4)) == 4
    assert ledger.accept(chunk(2, 6, worker="copy")) == 2  # overlaps: only 4 and 5 are new
    assert ledger.accept(chunk(0, 6)) == 0
    assert ledger.records == [0, 10, 20, 30, 40, 50]
    assert (ledger.done, ledger.failed, ledger.chunks) == (6, 0, 2)
    stats = ledger.result(RunStatus.COMPLETED, 1.0, 0.1, None).stats
    assert {name: w.chunks for name, w in stats.workers.items()} == {"w": 1, "copy": 1}


@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 8), st.sets(st.integers(0, 40), max_size=3)),
        max_size=12,
    )
)
def test_whole_new_chunks_fold_in_as_item_by_item_would(
    spans: list[tuple[int, int, set[int]]],
) -> None:
    # New chunks without failures fold in by slices; others item by item: the same ledger.
    ledger, done, records, failed, stream = Ledger(range(40), StopPolicy()), set(), {}, set(), []
    for start, length, fails in spans:
        stop = min(40, start + length)
        bad = tuple(sorted(p for p in fails if start <= p < stop))
        new = [p for p in range(start, stop) if p not in done]
        assert ledger.accept(chunk(start, stop, failed=bad)) == len(new)
        done.update(new)
        failed.update(p for p in new if p in bad)
        records.update({p: p * 10 for p in new if p not in bad})
        stream.extend(p for p in new if p not in bad)
    assert ledger.records == [records.get(p) for p in range(40)]
    assert (ledger.done, ledger.failed) == (len(done), len(failed))
    assert [e.position for e in ledger.errors()] == sorted(failed)
    assert ledger.missing() == _ranges(sorted(set(range(40)) - done))
    assert [p for batch in ledger.completed(lambda: True, 0.0) for p in batch] == stream


def _ranges(positions: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for p in positions:
        if out and out[-1][1] == p:
            out[-1] = (out[-1][0], p + 1)
        else:
            out.append((p, p + 1))
    return out


def test_a_copy_that_brings_nothing_new_adds_no_worker_stats() -> None:
    ledger = Ledger(range(4), StopPolicy())
    ledger.accept(chunk(0, 4, worker="a"))
    ledger.accept(chunk(0, 4, worker="b"))
    assert list(ledger.result(RunStatus.COMPLETED, 1.0, 0.0, None).stats.workers) == ["a"]


def test_resumed_chunks_count_as_resumed_and_missing_ranges_remain() -> None:
    ledger = Ledger(range(10), StopPolicy())
    ledger.accept(chunk(2, 4), resumed=True)
    ledger.accept(chunk(6, 7), resumed=True)
    assert ledger.resumed == 3 and ledger.chunks == 0
    assert ledger.missing() == [(0, 2), (4, 6), (7, 10)]


def test_failures_are_kept_in_index_order_and_counted() -> None:
    ledger = Ledger(range(6), StopPolicy())
    ledger.accept(chunk(3, 6, failed=(5,)))
    ledger.accept(chunk(0, 3, failed=(1,)))
    assert [e.position for e in ledger.errors()] == [1, 5]
    result = ledger.result(ledger.final_status(), 1.0, 0.0, None)
    assert result.status is RunStatus.COMPLETED
    assert (result.stats.ok, result.stats.failed, result.stats.not_run) == (4, 2, 0)


def test_on_error_raise_stops_at_the_first_failed_item() -> None:
    ledger = Ledger(range(6), StopPolicy(on_error="raise"))
    ledger.accept(chunk(0, 3))
    assert not ledger.stopping
    ledger.accept(chunk(3, 6, failed=(4,)))
    assert ledger.stopping and ledger.stop_error is not None and ledger.stop_error.position == 4
    assert ledger.stop_reason == "item 4 failed (on_error='raise')"
    assert ledger.final_status() is RunStatus.STOPPED


def test_max_failures_stops_once_that_many_failed() -> None:
    ledger = Ledger(range(9), StopPolicy(max_failures=2))
    ledger.accept(chunk(0, 3, failed=(0,)))
    assert not ledger.stopping
    ledger.accept(chunk(3, 6, failed=(3, 4)))
    assert ledger.stop_reason == "3 items failed (max_failures=2)"


def test_a_run_that_ended_short_is_cancelled() -> None:
    ledger = Ledger(range(4), StopPolicy())
    ledger.accept(chunk(0, 2))
    assert ledger.final_status() is RunStatus.CANCELLED
    ledger.accept(chunk(2, 4))
    assert ledger.final_status() is RunStatus.COMPLETED


def test_completed_positions_stream_to_a_reader_on_another_thread() -> None:
    ledger = Ledger(range(6), StopPolicy())
    finished = threading.Event()
    seen: list[int] = []

    def read() -> None:
        for batch in ledger.completed(finished.is_set, 0.05):
            seen.extend(batch)

    reader = threading.Thread(target=read)
    reader.start()
    ledger.accept(chunk(3, 6, failed=(4,)))
    ledger.accept(chunk(0, 3))
    finished.set()
    with ledger.cond:
        ledger.cond.notify_all()
    reader.join(10)
    assert not reader.is_alive()
    assert seen == [3, 5, 0, 1, 2]  # completion order; failed position 4 is left out
