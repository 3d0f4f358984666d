"""The dispatcher's decisions, without a cluster: what is sent, sent again, copied, given up."""

from __future__ import annotations

import pytest

from kit._engine.plan import ChunkPlanner
from kit._engine.policy import RESULT_LOST, DispatchPolicy, Flight, Isolated, Liveness, Overdue
from kit.errors import NoWorkersError, SchedulerLostError
from kit.store._chunk_result import ChunkResult


class Died(Exception):
    """What a task that lost its worker raises: Dask names the worker it died on."""

    def __init__(self, address: str) -> None:
        super().__init__(f"worker {address} died")
        self.last_worker = type("Worker", (), {"address": address})()


def policy(items: int = 16, chunk: int = 4, threads: int = 2, retries: int = 1) -> DispatchPolicy:
    return DispatchPolicy(
        ChunkPlanner([(0, items)], n_workers=threads, chunk_size=chunk), range(items), retries
    )


def send(p: DispatchPolicy, room: int) -> list[Flight]:
    flights = [
        Flight(start, stop, 0, False, key=f"{start}-{stop}-{deaths}", deaths=deaths)
        for start, stop, deaths in p.to_send(room)
    ]
    for flight in flights:
        p.sent(flight)
    return flights


def back(start: int, stop: int, busy: float = 0.01) -> ChunkResult:
    return ChunkResult(start, list(range(start, stop)), [], "w", busy)


def test_a_completed_chunk_is_folded_in_and_its_copy_cancelled() -> None:
    p = policy()
    (first, _) = send(p, 2)
    p.sent(Flight(first.start, first.stop, 0, False, key="copy"))  # a backup of it
    chunk, cancel = p.arrived(first.key, back(0, 4), now=first.sent + 0.02, connected=True)
    assert chunk is not None and chunk.start == 0
    assert [f.key for f in cancel] == ["copy"] and "copy" not in p.in_flight
    assert p.round_trip == pytest.approx(0.01, abs=1e-3)


def test_a_chunk_cut_at_its_budget_puts_the_rest_back() -> None:
    p = policy(items=8)
    flights = send(p, 4)
    assert p.planned_all
    chunk, _ = p.arrived(flights[0].key, back(0, 2), now=1.0, connected=True)
    assert chunk is not None and not p.planned_all
    assert p.to_send(4) == [(2, 4, 0)]


def test_a_chunk_lost_once_goes_again_in_one_piece_per_thread() -> None:
    p = policy(threads=3)
    (first, *_) = send(p, 1)
    chunk, _ = p.arrived(first.key, Died("w1"), now=1.0, connected=True)
    assert chunk is None
    assert p.to_send(5)[:3] == [(0, 2, 1), (2, 3, 1), (3, 4, 1)]


def test_a_piece_lost_again_runs_its_items_alone_then_gives_up_on_the_killer() -> None:
    p = policy(retries=1)
    piece = Flight(0, 2, 0, False, key="piece", deaths=1)
    p.sent(piece)
    p.arrived("piece", Died("w1"), now=1.0, connected=True)
    assert list(p.recovery.isolated) == [Isolated(0, 1, 0, 2), Isolated(1, 2, 0, 2)]
    assert p.isolating()
    sends = p.recovery.sends(p.in_flight, {"w1": "running", "w2": "running"}, {"w1": [], "w2": []})
    assert [(s.start, s.worker) for s in sends] == [(0, "w1"), (1, "w2")]
    alone = Flight(0, 1, 0, True, key="alone", worker="w1", deaths=2)
    p.sent(alone)
    p.arrived("alone", Died("w1"), now=1.0, connected=True)  # one more attempt
    assert list(p.recovery.isolated) == [Isolated(0, 1, 1, 2)]
    p.recovery.isolated.clear()
    last = Flight(0, 1, 1, True, key="last", worker="w1", deaths=2)
    p.sent(last)
    failed, _ = p.arrived("last", Died("w1"), now=1.0, connected=True)
    assert failed is not None and failed.records == [None]
    assert "failed 4 times, the last 2 with the item run alone" in failed.errors[0].message


def test_an_item_that_ran_on_another_worker_than_sent_goes_again_uncharged() -> None:
    p = policy()
    alone = Flight(3, 4, 0, True, key="alone", worker="gone", deaths=2)
    p.sent(alone)
    p.arrived("alone", Died("other"), now=1.0, connected=True)
    assert list(p.recovery.isolated) == [Isolated(3, 4, 0, 2)]


def test_items_alone_wait_until_the_chunks_sent_before_are_on_workers() -> None:
    p = policy()
    send(p, 1)
    p.recovery.isolated.append(Isolated(8, 9, 0, 1))
    assert (
        p.recovery.sends(p.in_flight, {"w1": "running"}, {"w1": []}) == []
    )  # 0-4 is on no worker yet
    sends = p.recovery.sends(
        p.in_flight, {"w1": "running", "w2": "running"}, {"w1": ["0-4-0"], "w2": []}
    )
    assert [(s.start, s.worker) for s in sends] == [(8, "w2")]


def test_a_task_cancelled_by_a_lost_scheduler_goes_again_as_it_was() -> None:
    p = policy()
    (first, *_) = send(p, 1)
    assert p.arrived(first.key, None, now=1.0, connected=False) == (None, [])
    assert list(p.requeued) == [first] and not p.recovery.spread and not p.recovery.isolated


def test_a_result_lost_with_its_worker_goes_again_as_it_was_on_any_worker() -> None:
    # The chunk's items finished: they are not suspects to run alone, and the worker
    # an item alone was placed on has left.
    p = policy()
    first, _ = send(p, 2)
    first.worker = "tcp://gone:1"
    assert p.arrived(first.key, RESULT_LOST, now=1.0, connected=True) == (None, [])
    (again,) = p.requeued
    assert (again.start, again.stop, again.deaths, again.worker) == (0, 4, 0, None)
    assert not p.recovery.spread and not p.recovery.isolated
    assert p.arrived(first.key, RESULT_LOST, now=1.0, connected=True) == (None, [])
    assert len(p.requeued) == 1  # already taken back: nothing twice


def test_an_overdue_word_plans_the_items_behind_the_slow_one_at_once() -> None:
    p = policy(items=8)
    (first, _) = send(p, 2)
    p.overdue(Overdue(first.key, 1))
    assert (first.start, first.stop) == (0, 1) and p.to_send(4) == [(1, 4, 0)]
    p.overdue(Overdue(first.key, 1))  # said again: nothing more behind it
    assert p.to_send(4) == []


def test_backups_copy_queued_chunks_worth_a_round_trip_one_per_idle_worker() -> None:
    p = policy(items=16)
    flights = send(p, 4)
    p.planner.observe(4, 4.0)  # a second an item: every chunk is worth a copy
    queued = {"w1": [f.key for f in flights], "w2": [], "w3": []}
    assert [f.key for f in p.to_copy(queued)] == [flights[1].key, flights[2].key]
    assert p.to_copy({"w1": [f.key for f in flights]}) == []  # no worker idles


def test_a_cluster_without_workers_or_scheduler_ends_the_run_after_the_timeout() -> None:
    alive = Liveness(no_worker_timeout=5)
    alive.seen(0, now=10.0)
    alive.check_workers(now=14.0, waiting=1)
    with pytest.raises(NoWorkersError, match="no worker for 5 s"):
        alive.check_workers(now=15.0, waiting=1)
    alive.scheduler_lost(now=20.0, closed=False, address="tcp://s")
    with pytest.raises(SchedulerLostError, match="went away during the run"):
        alive.scheduler_lost(now=25.0, closed=False, address="tcp://s")
    alive.connected()
    alive.scheduler_lost(now=30.0, closed=False, address="tcp://s")


def take(p: DispatchPolicy, spans: list[tuple[int, int, int]]) -> None:
    for start, stop, deaths in spans:
        p.sent(Flight(start, stop, 0, False, key=f"{start}-{stop}-{deaths}", deaths=deaths))


def test_a_turn_fills_two_chunks_a_thread_and_goes_ahead_only_below_its_share() -> None:
    p = policy(items=16, chunk=2, threads=2)
    first = p.turn(stopping=False, arrival=False, shared=True)
    assert first.send == [(0, 2, 0), (2, 4, 0), (4, 6, 0), (6, 8, 0)] and first.priority == 1
    take(p, first.send)
    assert p.turn(stopping=False, arrival=False, shared=True).send == []  # full: 4 out
    p.arrived("0-2-0", back(0, 2), now=1.0, connected=True)
    p.arrived("2-4-0", back(2, 4), now=1.0, connected=True)
    p.arrived("4-6-0", back(4, 6), now=1.0, connected=True)
    again = p.turn(stopping=False, arrival=True, shared=True)
    assert len(again.send) == 3 and again.priority == 1  # 1 out, below its 2 threads
    take(p, again.send)
    assert p.turn(stopping=True, arrival=True, shared=False).send == []  # stopping: none


def test_a_turn_sends_again_what_the_lost_scheduler_cancelled_and_backs_up_only_at_the_end() -> (
    None
):
    p = policy(items=4, chunk=2, threads=1)
    take(p, p.turn(stopping=False, arrival=False, shared=False).send)
    p.cancelled_by_loss("0-2-0")
    turn = p.turn(stopping=False, arrival=False, shared=False)
    assert [(f.start, f.stop) for f in turn.resend] == [(0, 2)] and turn.send == []
    assert p.turn(stopping=False, arrival=False, shared=False).resend == []  # told once
    p.sent(turn.resend[0])  # the loop sends it again
    p.arrived("2-4-0", back(2, 4, busy=2.0), now=3.0, connected=True)
    # Everything is planned and chunks take seconds: an idle worker may copy one.
    assert p.turn(stopping=False, arrival=True, shared=False).back_up
    p.arrived("0-2-0", back(0, 2, busy=2.0), now=5.0, connected=True)
    # Nothing out is worth a copy: the scheduler is not even asked.
    assert not p.turn(stopping=False, arrival=True, shared=False).back_up
    assert not p.turn(stopping=False, arrival=False, shared=False).back_up


def test_while_lost_items_run_alone_a_turn_sends_nothing_else() -> None:
    p = policy(items=8, chunk=4, threads=2, retries=1)
    take(p, p.turn(stopping=False, arrival=False, shared=False).send)
    p.arrived("0-4-0", Died("tcp://a:1"), now=1.0, connected=True)  # cut into pieces
    take(p, p.to_send(room=4))
    for key in list(p.flights()):
        if key.startswith(("0-", "1-", "2-", "3-")) and key.endswith("-1"):
            p.arrived(key, Died("tcp://a:1"), now=2.0, connected=True)  # its pieces die too
    turn = p.turn(stopping=False, arrival=True, shared=False)
    assert turn.isolate and turn.send == [] and not turn.back_up
    assert not p.turn(stopping=True, arrival=False, shared=False).isolate


def test_the_loop_only_carries_out_turns_never_touching_the_policys_or_planners_state() -> None:
    # As distributed's Adaptive only dispatches what AdaptiveCore recommends.
    import ast
    from pathlib import Path

    import kit._engine.dask as loop

    tree = ast.parse(Path(loop.__file__).read_text(encoding="utf-8"))
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    touched = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and ast.unparse(node.value) in {"self.policy", "policy", "self.planner", "planner"}
        and id(node) not in called
    ]
    assert touched == []
