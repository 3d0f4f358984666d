"""Collectors: episodes depend on their id alone; transitions carry their provenance."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kit.rl import EpisodeCollector, Evaluator, SampleCollector
from kit.rl.choose import get_worker_pool
from kit.rl.collect import EVAL, TRAIN, episode_seed
from kit.rl.workers import make_workers
from tests.rl.envs import CountEnv, random_action, trajectory


def collect_episodes(num_envs: int, mode: str, n: int = 12) -> dict[int, list[tuple]]:
    env_fn = functools.partial(CountEnv, length_mod=7)
    with get_worker_pool(make_workers(env_fn, num_envs, mode=mode)) as pool:
        episodes = EpisodeCollector(pool, seed=5).collect(n, random_action)
    assert [e.episode_id for e in episodes] == list(range(n))
    return {e.episode_id: trajectory(e) for e in episodes}


def test_episodes_are_identical_whatever_the_number_of_envs_and_the_mode() -> None:
    reference = collect_episodes(1, "sync")
    for num_envs, mode in [(4, "sync"), (3, "thread"), (16, "sync"), (2, "process")]:
        assert collect_episodes(num_envs, mode) == reference, (num_envs, mode)


def test_transitions_record_where_they_came_from() -> None:
    with get_worker_pool(make_workers(CountEnv, 2)) as pool:
        episodes = EpisodeCollector(pool, seed=1, worker="w0").collect(
            3, random_action, policy_version=7
        )
    for episode in episodes:
        env_seed, _ = episode_seed(1, TRAIN, episode.episode_id)
        assert episode.seed == env_seed
        assert [t.step for t in episode.transitions] == list(range(episode.length))
        for t in episode.transitions:
            assert (t.episode_id, t.env_index, t.worker, t.policy_version, t.seed) == (
                episode.episode_id,
                episode.env_index,
                "w0",
                7,
                env_seed,
            )
        assert episode.transitions[-1].done and episode.status == "terminated"


def test_training_and_evaluation_seeds_never_coincide() -> None:
    train = {episode_seed(0, TRAIN, i)[0] for i in range(10_000)}
    evaluation = {episode_seed(0, EVAL, i)[0] for i in range(10_000)}
    assert not train & evaluation


def test_the_global_numpy_rng_is_never_touched() -> None:
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    collect_episodes(3, "sync")
    assert np.array_equal(np.random.get_state()[1], before)


def test_the_sample_collector_returns_exactly_n_and_loses_no_step() -> None:
    env_fn = functools.partial(CountEnv, length_mod=5)
    with get_worker_pool(make_workers(env_fn, 3)) as pool:
        collector = SampleCollector(pool, seed=2)
        batches = [collector.collect(10, random_action) for _ in range(5)]
        assert [len(b) for b in batches] == [10] * 5
        everything = [t for b in batches for t in b]
        by_episode: dict[int, list[int]] = {}
        for t in everything:
            by_episode.setdefault(t.episode_id, []).append(t.step)
        for steps in by_episode.values():
            # Each episode's steps arrive in order with no gap across calls.
            assert steps == list(range(len(steps)))
        assert collector.envstep >= 50
        more = collector.collect(4, random_action, drop_extra=False)
        assert len(more) >= 4


def test_sample_collector_episodes_match_the_episode_collector() -> None:
    env_fn = functools.partial(CountEnv, length_mod=5)
    with get_worker_pool(make_workers(env_fn, 3)) as pool:
        collector = SampleCollector(pool, seed=2)
        collector.collect(60, random_action)
        ended = {e.episode_id: trajectory(e) for e in collector.last_episodes}
    with get_worker_pool(make_workers(env_fn, 1)) as pool:
        reference = EpisodeCollector(pool, seed=2).collect(max(ended) + 1, random_action)
    assert ended and all(ended[i] == trajectory(reference[i]) for i in ended)


def test_a_policy_that_returns_the_wrong_number_of_actions_is_named() -> None:
    with (
        get_worker_pool(make_workers(CountEnv, 2)) as pool,
        pytest.raises(ValueError, match="returned 1 actions for 2 observations"),
    ):
        EpisodeCollector(pool).collect(2, lambda obs, rngs: [0])


def test_broken_episodes_come_back_with_their_status() -> None:
    from tests.rl.envs import FaultyEnv

    bad = frozenset({episode_seed(0, TRAIN, 2)[0]})
    env_fn = functools.partial(FaultyEnv, "raise", bad)
    with get_worker_pool(make_workers(env_fn, 2)) as pool:
        episodes = EpisodeCollector(pool).collect(5, random_action)
    assert [e.status for e in episodes] == ["terminated"] * 2 + ["env_error"] + ["terminated"] * 2
    assert "env blew up" in str(episodes[2].error) and episodes[2].length == 1


@pytest.mark.parametrize("mode", ["sync", "thread", "process"])
def test_a_pool_is_free_for_the_next_user_after_a_sample_collector_closes(mode: str) -> None:
    with get_worker_pool(make_workers(CountEnv, 3, mode=mode), step_timeout=30) as pool:
        with SampleCollector(pool, seed=0, policy=random_action) as collector:
            assert len(collector.collect(10)) == 10
            assert pool.pending  # episodes go on across calls: actions are in flight
        assert pool.pending == []
        episodes = EpisodeCollector(pool, seed=0).collect(2, random_action)
        assert [e.status for e in episodes] == ["terminated", "terminated"]
        evaluator = Evaluator(pool, n_episode=2)
        assert len(evaluator.eval(random_action).returns) == 2


class CountingPolicy:
    def __init__(self) -> None:
        self.resets = 0

    def __call__(self, observations: list, rngs: list) -> list[int]:
        return [0 for _ in observations]

    def reset(self) -> None:
        self.resets += 1


def test_reset_env_switches_pools_and_reset_policy_switches_policies() -> None:
    first = get_worker_pool(make_workers(CountEnv, 2))
    second = get_worker_pool(make_workers(CountEnv, 2))
    collector = SampleCollector(first, seed=0)
    with pytest.raises(TypeError, match="no policy: pass one"):
        collector.collect(4)
    policy = CountingPolicy()
    collector.reset_policy(policy)
    assert policy.resets == 1
    collector.collect(5)
    steps = collector.envstep
    collector.reset_env(second)
    assert first.pending == [] and collector.envstep == steps
    assert len(collector.collect(5)) == 5
    assert collector.envstep > steps
    assert second.pending
    collector.close()
    assert second.pending == []
    first.cleanup()
    second.cleanup()


def test_an_evaluator_without_a_pool_gets_one_with_reset_env() -> None:
    evaluator = Evaluator(None, n_episode=3, policy=random_action)
    with pytest.raises(RuntimeError, match="has no pool"):
        evaluator.eval()
    with get_worker_pool(make_workers(CountEnv, 2)) as pool:
        evaluator.reset_env(pool)
        assert len(evaluator.eval().returns) == 3
