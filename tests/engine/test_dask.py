"""The Dask dispatcher: its own accounting, and chunks cut at their budget on a cluster."""

from __future__ import annotations

import queue
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster

from kit import Runner
from kit._engine.dask import MAP_CHUNKS, BusyClock, TaskSender, gather
from kit._engine.inject import ForwardSpec
from kit._engine.plan import ChunkPlanner
from kit._engine.policy import RESULT_LOST, DispatchPolicy, Flight, Isolated
from kit._engine.spec import ChunkJob
from kit.errors import ProviderSetupError
from kit.events import ChunkFinished
from tests.workloads import (
    AllAtOnce,
    EmptyEnv,
    LoggedSleeps,
    ToyProvider,
    WaitsForTheNext,
    lines,
    toy_config,
)


def test_waiting_for_arrivals_or_the_scheduler_is_not_counted_as_the_drivers_work() -> None:
    # Counted, a gather's round trip made the cost per chunk the time between
    # arrivals, and the planner's floor on the last chunks grew with the chunks.
    times = iter([0.0, 1.0, 4.0, 5.0, 6.0, 6.5, 8.0])
    clock = BusyClock(now=lambda: next(times))
    with clock.waiting():  # 1.0 -> 4.0
        pass
    assert clock.per_chunk(2) == 1.0  # 5 s, less 3 s of waiting, over 2 chunks
    with clock.waiting():  # 6.0 -> 6.5
        pass
    assert clock.per_chunk(1) == 2.5  # only from the last charge on


def test_a_wait_that_raises_is_still_not_work() -> None:
    times = iter([0.0, 1.0, 3.0, 3.0])
    clock = BusyClock(now=lambda: next(times))
    try:
        with clock.waiting():
            raise TimeoutError
    except TimeoutError:
        pass
    assert clock.per_chunk(1) == 1.0


def test_items_behind_a_slow_one_in_its_chunk_are_handed_back_and_run_once(
    tmp_path: Path, local: dict
) -> None:
    # 400 items of 2 ms and one of 2 s: past its budget (twice the chunk's expected
    # time), the slow item's chunk ends with it and the items behind it go again.
    sleeps = [0.002] * 400
    sleeps[250] = 2.0
    runner = LoggedSleeps(ToyProvider(toy_config(tmp_path)), parallel=local)
    runner.run(range(2), sleeps=[0.0, 0.0])  # the env is on the workers
    (tmp_path / "calls.log").unlink()
    finished: list[ChunkFinished] = []
    result = runner.run(range(400), sleeps=sleeps, on_event=partial(_chunks, finished))
    assert [r["idx"] for r in result.records] == list(range(400))
    assert Counter(lines(tmp_path, "calls.log")) == Counter(str(i) for i in range(400))
    (slow,) = [c for c in finished if c.start <= 250 < c.start + c.items]
    assert slow.start + slow.items == 251, (slow.start, slow.items)


def test_items_behind_a_slow_one_run_while_it_still_runs(tmp_path: Path, local: dict) -> None:
    # Item 250 waits for item 251, behind it in its chunk: only a worker's word that
    # 250 passed its budget, sent while 250 runs, lets 251 run before 250 ends.
    runner = WaitsForTheNext(ToyProvider(toy_config(tmp_path)), parallel=local)
    runner.run(range(2), slow=-5)  # the env is on the workers
    finished: list[ChunkFinished] = []
    result = runner.run(range(400), slow=250, on_event=partial(_chunks, finished))
    assert [r["idx"] for r in result.records] == list(range(400))
    assert result.records[250]["saw_the_next_run"], "item 251 waited for the slow item"
    (slow,) = [c for c in finished if c.start <= 250 < c.start + c.items]
    assert slow.start + slow.items == 251, (slow.start, slow.items)
    assert sum(c.items for c in finished) == 400  # each position once


class MapSizes(Client):
    """A real client that keeps how many tasks each ``map`` call sends."""

    sizes: list[int]

    def map(self, func: Any, *iterables: Any, **kwargs: Any) -> Any:
        self.sizes.append(len(iterables[0]))
        return super().map(func, *iterables, **kwargs)


class Same(Runner):
    @staticmethod
    def forward(idx: int) -> int:
        return idx


def test_chunks_go_out_at_most_map_chunks_to_a_graph_update() -> None:
    # The scheduler starts none of an update's tasks before it has taken all in:
    # 100 chunks (two per thread of 50) go out as 64 and 36.
    with (
        LocalCluster(n_workers=1, threads_per_worker=50, processes=False) as cluster,
        MapSizes(cluster, set_as_default=False) as client,
    ):
        client.sizes = []
        result = Same(EmptyEnv({}), client=client, chunk_size=1).run(range(300))
    assert result.records == list(range(300))
    assert MAP_CHUNKS == 64
    assert client.sizes[:2] == [64, 36]
    assert max(client.sizes) == 64


def _chunks(out: list[ChunkFinished], event: object) -> None:
    if isinstance(event, ChunkFinished):
        out.append(event)


def _echo(items: list[int]) -> list[int]:
    return items


def test_a_chunk_sent_again_is_a_new_task_while_its_last_future_is_still_held(
    local_client: Client,
) -> None:
    # distributed's submit gives back the future it holds for a key it knows: sent
    # again under its last task's key, a chunk the cluster had cancelled came back
    # cancelled at once, was counted as a worker death each time, and its items
    # failed without running ("this item's task failed 5 times").
    job = ChunkJob("again", _echo, ForwardSpec.of(_echo, "forward"), {}, range(4), None)
    planner = ChunkPlanner([(0, 4)], n_workers=1)
    policy = DispatchPolicy(planner, job.indices, retries=1, backups="off")
    sender = TaskSender(local_client, "no-env-needed", job, planner, policy, queue.Queue())
    sender.launch(Isolated(0, 4, 0, 0), alone=False)
    (first,) = policy.flights().values()
    local_client.cancel([first.future])
    assert first.future.status == "cancelled"
    policy.settle(first.key)  # it came back; the loop holds it while it sends it again
    sender.relaunch(first)
    (again,) = policy.flights().values()
    assert again.key != first.key
    # It ran: on a worker, where this test built no env.
    with pytest.raises(ProviderSetupError, match="'no-env-needed' is not built on worker"):
        again.future.result(timeout=60)


def test_slots_that_wait_for_a_probe_get_one_when_the_wait_ends(tmp_path: Path) -> None:
    # On 16 threads, 8 probe first and the rest wait for one to come back; these
    # probes end only once all 16 items run, so only the end of the wait lets them.
    with (
        LocalCluster(n_workers=1, threads_per_worker=16, processes=False) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        runner = AllAtOnce(ToyProvider(toy_config(tmp_path)), client=client)
        result = runner.run(range(16), together=16)
    assert [r["all_began"] for r in result.records] == [True] * 16


def _forty_two() -> int:
    return 42


def test_a_result_that_left_with_its_worker_is_said_lost_and_not_waited_for() -> None:
    # distributed's gather waits for the cluster to compute a lost result again: on a
    # cluster its last worker had just left (scaled to 0 after the chunk finished), the
    # run hung in it and never said "the cluster has had no worker". Before, a result
    # known lost was taken as a worker's death: its items then ran alone as suspects.
    with (
        LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        staying, leaving = cluster.workers.values()
        kept = client.submit(_forty_two, key="kept", workers=[staying.address])
        gone = client.submit(_forty_two, key="gone", workers=[leaving.address])
        client.gather([kept, gone])
        flights = [Flight(0, 1, 0, False, key=f.key, future=f) for f in (kept, gone)]
        client.sync(leaving.close)
        assert gather(client, flights, BusyClock()) == [42, RESULT_LOST]
        assert gone.status == "cancelled"  # the cluster computes it no more: the run sends anew
