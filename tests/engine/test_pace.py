"""How fast the cluster starts tasks: measured on the first wave, and what the dispatcher does."""

from __future__ import annotations

import pickle

from kit._engine.pace import PROBE_SLOTS, StartSpread
from kit._engine.plan import TASK_SECONDS, ChunkPlanner
from kit._engine.policy import DispatchPolicy, Flight
from kit.store._chunk_result import ChunkResult


def test_the_rate_is_summed_over_workers_each_on_its_own_clock() -> None:
    spread = StartSpread(slots=6)
    for thread, at in ((1, 100.0), (2, 100.02), (3, 100.04)):  # 2 tasks in 40 ms: 50 a second
        spread.began("w0", thread, at)
    assert spread.task_seconds is not None  # half the slots have begun: measured
    spread.began("w1", 1, 7.0)  # too late to count: kept as measured
    assert round(spread.task_seconds, 6) == 0.02


def test_a_slot_s_second_chunk_is_not_a_start_it_waited_for_the_first() -> None:
    spread = StartSpread(slots=8)
    spread.began("w0", 1, 0.0)
    spread.began("w0", 1, 2.0)  # the same thread again, after its first chunk
    spread.began("w0", 2, 0.01)
    assert spread.task_seconds is None  # two slots of eight
    spread.began("w0", 3, 0.02)
    spread.began("w0", 4, 0.03)
    assert round(spread.task_seconds or 0.0, 6) == 0.01


def test_slots_all_begun_at_one_instant_measure_nothing() -> None:
    spread = StartSpread(slots=2)
    spread.began("w0", 1, 5.0)
    spread.began("w0", 2, 5.0)
    assert spread.task_seconds is None


def test_a_chunk_result_says_where_and_when_it_ran_and_pickles() -> None:
    chunk = ChunkResult(0, [1], [], "w0", 0.1, slot=(140, 12.5))
    assert pickle.loads(pickle.dumps(chunk)).slot == (140, 12.5)


def _policy(items: int, threads: int) -> DispatchPolicy:
    return DispatchPolicy(ChunkPlanner([(0, items)], n_workers=threads), range(items), retries=1)


def _take(p: DispatchPolicy, spans: list[tuple[int, int, int]]) -> list[str]:
    keys = []
    for start, stop, _ in spans:
        key = f"{start}-{stop}"
        p.sent(Flight(start, stop, 0, False, key=key))
        keys.append(key)
    return keys


def test_on_many_slots_a_few_probe_and_the_rest_wait_for_one_to_come_back() -> None:
    p = _policy(items=80_000, threads=1024)
    probes = p.to_send(room=2048, now=0.0)
    assert [stop - start for start, stop, _ in probes] == [1] * PROBE_SLOTS
    assert p.to_send(room=2048, now=0.5) == []  # starting 1,024 probes would take ~1 s
    assert p.wake_in(now=0.5) == 1024 * TASK_SECONDS - 0.5
    assert p.wake_in(now=5.0) is None  # the wait is over: nothing to wake for
    _take(p, probes)
    p.arrived("0-1", ChunkResult(0, [0], [], "w0", 0.08), now=0.6, connected=True)
    assert p.wake_in(now=0.6) is None
    wave = p.to_send(room=2048 - 7, now=0.6)
    assert len(wave) == 2048 - 7
    assert {stop - start for start, stop, _ in wave[:100]} == {18}  # 1.37 s of 80 ms items


def test_the_first_wave_s_starts_set_the_cluster_s_time_per_task() -> None:
    p = _policy(items=80_000, threads=16)
    _take(p, p.to_send(room=32, now=0.0))
    p.arrived("0-1", ChunkResult(0, [0], [], "w0", 0.08), now=0.1, connected=True)
    keys = _take(p, p.to_send(room=32 - 7, now=0.1))
    # Sixteen slots on two workers, each starting a task every 4 ms: 500 tasks a second.
    for n, key in enumerate(keys[:16]):
        start, stop = (int(x) for x in key.split("-"))
        began = (n // 2) * 0.004
        chunk = ChunkResult(start, list(range(start, stop)), [], f"w{n % 2}", 1.0, slot=(n, began))
        p.arrived(key, chunk, now=2.0, connected=True)
    assert round(p.planner.task_seconds, 6) == 0.002


def test_probes_on_every_slot_when_the_slots_are_few_or_the_chunk_size_is_fixed() -> None:
    few = _policy(items=1000, threads=PROBE_SLOTS)
    assert [b - a for a, b, _ in few.to_send(room=16, now=0.0)] == [1] * 8 + [4] * 8
    fixed = DispatchPolicy(ChunkPlanner([(0, 1000)], 64, chunk_size=5), range(1000), 1)
    assert len(fixed.to_send(room=128, now=0.0)) == 128
