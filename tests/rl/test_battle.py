"""Two-player collection: PettingZoo's parallel API, who acted with which version, self-play."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from kit.rl.battle import (
    BattleCollector,
    BattleEvaluator,
    FrozenPolicy,
    Lineup,
    RockPaperScissors,
    joint_env,
)
from kit.rl.choose import get_worker_pool

RPS = functools.partial(joint_env, RockPaperScissors, max_cycles=5)


def rock(observations: list[Any], rngs: list[np.random.Generator]) -> list[int]:
    return [0 for _ in observations]


def paper(observations: list[Any], rngs: list[np.random.Generator]) -> list[int]:
    return [1 for _ in observations]


def uniform(observations: list[Any], rngs: list[np.random.Generator]) -> list[int]:
    return [int(rng.integers(3)) for rng in rngs]


class Learner:
    """A policy whose weights (here: the move it plays) change with its version."""

    name = "learner"

    def __init__(self) -> None:
        self.version = 0
        self.move = 0

    def __call__(self, observations: list[Any], rngs: list[Any]) -> list[int]:
        return [self.move for _ in observations]


def test_the_built_in_env_passes_pettingzoo_s_parallel_api_test() -> None:
    parallel_api_test(RockPaperScissors(max_cycles=20), num_cycles=100)


def test_each_transition_records_the_agent_the_policy_and_its_version() -> None:
    paper_v = FrozenPolicy(paper, version=4)
    with get_worker_pool(RPS, num_envs=2, mode="sync") as pool:
        episodes = BattleCollector(pool, {"player_0": rock, "player_1": paper_v}).collect(3)
    assert [e.episode_id for e in episodes] == [0, 1, 2]
    episode = episodes[0]
    assert episode.ok and episode.status == "truncated" and episode.length == 10
    seen = {(t.agent, t.policy, t.policy_version) for t in episode.transitions}
    assert seen == {("player_0", "player_0", 0), ("player_1", "paper@4", 4)}
    assert episode.returns(by="agent") == {"player_0": -5.0, "player_1": 5.0}
    assert [t.step for t in episode.transitions[:4]] == [0, 0, 1, 1]
    first = episode.transitions[0]
    assert (first.obs, first.action, first.next_obs) == (3, 0, 1)  # saw "none", then paper


def test_self_play_against_a_frozen_copy_keeps_the_opponent_s_version() -> None:
    learner = Learner()
    opponent = FrozenPolicy(learner)  # plays rock, at version 0, whatever the learner does next
    learner.version, learner.move = 3, 1  # the learner moved on: paper
    lineup = Lineup({"player_0": learner, "player_1": opponent}, swap=True)
    with get_worker_pool(RPS, num_envs=2, mode="sync") as pool:
        episodes = BattleCollector(pool, lineup).collect(2)
    for episode in episodes:
        by_policy = {t.policy: t.policy_version for t in episode.transitions}
        assert by_policy == {"learner": 3, "learner@0": 0}
        assert episode.returns(by="policy") == {"learner": 5.0, "learner@0": -5.0}
    sides = [{t.agent for t in e.transitions if t.policy == "learner"} for e in episodes]
    assert sides == [{"player_0"}, {"player_1"}]  # swap: both seats played


@pytest.mark.parametrize("num_envs", [1, 2])
def test_one_policy_in_both_seats_labels_each_transition_by_its_episode_s_seat(
    num_envs: int,
) -> None:
    lineup = Lineup({"player_0": rock, "player_1": rock}, swap=True)
    with get_worker_pool(RPS, num_envs=num_envs, mode="sync") as pool:
        episodes = BattleCollector(pool, lineup).collect(2)
    labels = [{(t.agent, t.policy) for t in e.transitions} for e in episodes]
    assert labels == [  # episode 1 swaps the seats, whatever runs beside it
        {("player_0", "player_0"), ("player_1", "player_1")},
        {("player_0", "player_1"), ("player_1", "player_0")},
    ]


@pytest.mark.parametrize("mode", ["thread", "process", "shared_memory"])
def test_battles_in_any_pool_match_the_in_process_ones(mode: str) -> None:
    lineup = {"player_0": uniform, "player_1": uniform}
    with get_worker_pool(RPS, num_envs=3, mode="sync") as pool:
        here = BattleCollector(pool, lineup, seed=9).collect(6)
    with get_worker_pool(RPS, num_envs=3, mode=mode, step_timeout=30) as pool:
        there = BattleCollector(pool, lineup, seed=9).collect(6)

    def moves(episodes: list[Any]) -> list[list[tuple[Any, ...]]]:
        return [[(t.agent, t.action, t.reward) for t in e.transitions] for e in episodes]

    assert moves(there) == moves(here)


def test_the_evaluator_counts_wins_on_both_sides() -> None:
    with get_worker_pool(RPS, num_envs=2, mode="sync") as pool:
        evaluator = BattleEvaluator(pool, n_episode=4)
        result = evaluator.eval(Lineup({"player_0": rock, "player_1": paper}, swap=True))
        assert result.wins == {"player_1": 4} and result.losses == {"player_0": 4}
        assert result.win_rate("player_1") == 1.0 and result.mean_return("player_0") == -5.0
        sides = {t.agent for e in result.episodes for t in e.transitions if t.policy == "player_1"}
        assert sides == {"player_0", "player_1"}
        draw = evaluator.eval({"player_0": rock, "player_1": rock})
        assert draw.draws == 4 and draw.wins == {}
        evaluator.close()
        assert pool.pending == []


def test_a_policy_giving_the_wrong_number_of_actions_is_named() -> None:
    def greedy(observations: list[Any], rngs: list[Any]) -> list[int]:
        return [0]

    with get_worker_pool(RPS, num_envs=2, mode="sync") as pool:
        collector = BattleCollector(pool, {"player_0": rock, "player_1": greedy})
        with pytest.raises(ValueError, match="policy 'player_1' returned 1 actions for 2"):
            collector.collect(2)
    with pytest.raises(ValueError, match="swap needs two policies"):
        Lineup({"player_0": rock}, swap=True)
