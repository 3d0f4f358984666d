"""Distributed collection: the same episodes inline, on a LocalCluster, and after a worker dies."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from typing import Any

import cloudpickle
import pytest

import kit
from kit.errors import ProviderSetupError
from kit.rl import DistributedCollector, EnvPoolProvider
from kit.rl.collect import EVAL
from tests.rl.envs import CountProvider, action_from_weights, random_policy, trajectory


def provider(**count: Any) -> CountProvider:
    return CountProvider({"num_envs": 2, "count": {"length_mod": 6, **count}})


def by_id(episodes: list[Any]) -> dict[int, list[tuple]]:
    return {e.episode_id: trajectory(e) for e in episodes}


def test_inline_and_local_cluster_give_the_same_episodes(local: dict[str, Any]) -> None:
    inline = DistributedCollector(provider(), random_policy, seed=4)
    inline.set_weights(None, version=0)
    expected = by_id(inline.collect(10))
    on_cluster = DistributedCollector(provider(), random_policy, parallel=local, seed=4)
    on_cluster.set_weights(None, version=0)
    episodes = on_cluster.collect(10)
    assert by_id(episodes) == expected
    assert {e.worker for e in episodes} <= {"0", "1"} and "driver" not in {
        e.worker for e in episodes
    }
    assert on_cluster.envstep == sum(e.length for e in episodes)
    assert on_cluster.next_episode_id == 10


def test_the_env_pool_is_built_once_per_worker_across_collections(local: dict[str, Any]) -> None:
    from kit.cluster._plugin import env_report

    shared = provider(length_mod=4)
    collector = DistributedCollector(shared, random_policy, parallel=local)
    collector.set_weights(None, 0)
    for _ in range(3):
        collector.collect(6)
    again = DistributedCollector(shared, random_policy, parallel=local)  # a new notebook cell
    again.set_weights(None, 1)
    again.collect(4)
    reports = collector.session.client.run(env_report, shared.env_name())
    assert [r["builds"] for r in reports.values()] == [1, 1]
    assert all(r["keys"] == ["pool"] for r in reports.values())


def test_weights_are_broadcast_by_version_and_recorded(local: dict[str, Any]) -> None:
    collector = DistributedCollector(provider(), action_from_weights, parallel=local)
    collector.set_weights({"action": 1}, version=3)
    first = collector.collect(4)
    collector.set_weights({"action": 0}, version=4)
    second = collector.collect(4)
    assert {t.action for e in first for t in e.transitions} == {1}
    assert {v for e in first for v in e.policy_versions} == {3}
    assert {t.action for e in second for t in e.transitions} == {0}
    assert {v for e in second for v in e.policy_versions} == {4}
    assert [e.episode_id for e in second] == [4, 5, 6, 7]


def test_evaluation_stream_reruns_the_same_ids_with_other_seeds(local: dict[str, Any]) -> None:
    train = DistributedCollector(provider(), random_policy, parallel=local)
    evaluation = DistributedCollector(provider(), random_policy, parallel=local, stream=EVAL)
    for c in (train, evaluation):
        c.set_weights(None, 0)
    a = evaluation.collect(episode_ids=range(4))
    b = evaluation.collect(episode_ids=range(4))
    assert by_id(a) == by_id(b)
    assert {e.seed for e in a}.isdisjoint({e.seed for e in train.collect(4)})


def test_what_goes_to_the_workers_pickles() -> None:
    collector = DistributedCollector(provider(), random_policy)
    for thing in (collector.runner.provider, random_policy, action_from_weights({"action": 1})):
        assert cloudpickle.loads(cloudpickle.dumps(thing)) is not None
    assert pickle.loads(pickle.dumps(provider().worker_setup_fn())) is not None


def test_env_processes_inside_dask_workers_are_refused_with_the_fix(local: dict[str, Any]) -> None:
    bad = EnvPoolProvider({"env": "CartPole-v1", "num_envs": 1, "mode": "process"})
    collector = DistributedCollector(bad, random_policy, parallel=local)
    collector.set_weights(None, 0)
    with pytest.raises(ProviderSetupError, match="use mode='thread'"):
        collector.collect(1)


@pytest.mark.slow
def test_a_worker_killed_during_collection_loses_no_episode() -> None:
    slow = provider(step_seconds=0.01)
    expected = DistributedCollector(slow, random_policy, seed=9)
    expected.set_weights(None, 0)
    reference = by_id(expected.collect(60))
    parallel = {"env": "local", "n_workers": 2, "options": {"name": "rl-sigkill"}}
    session = kit.get_session(parallel)
    try:
        collector = DistributedCollector(slow, random_policy, parallel=parallel, seed=9)
        collector.set_weights(None, 0)
        done: list[int] = []

        def kill_when_started() -> None:
            while len(done) < 8:
                time.sleep(0.01)
            victim = next(iter(session.client.run(os.getpid).values()))
            os.kill(victim, signal.SIGKILL)

        killer = threading.Thread(target=kill_when_started, daemon=True)
        killer.start()

        def count(event: Any) -> None:
            if type(event).__name__ == "ChunkFinished":
                done.append(event.items)

        episodes = collector.collect(60, on_event=count)
        killer.join(30)
        assert not killer.is_alive(), "the worker was not killed mid-collection"
        assert sum(done) == 60
        assert by_id(episodes) == reference
        assert [e.episode_id for e in episodes] == list(range(60))
    finally:
        session.close()
