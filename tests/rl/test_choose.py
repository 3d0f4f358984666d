"""get_worker_pool from an env factory: every mode by name, and auto measuring the first steps."""

from __future__ import annotations

import functools

import pytest

from kit.rl import gym_env
from kit.rl.choose import ROUND_TRIP, choose_mode, get_worker_pool, step_seconds, usable_cpus
from kit.rl.pool import AsyncWorkerPool, SyncWorkerPool
from kit.rl.shared import SharedMemoryPool
from tests.rl.envs import BusyEnv, CountEnv

CARTPOLE = functools.partial(gym_env, "CartPole-v1")


def test_auto_steps_cheap_envs_in_this_process() -> None:
    with get_worker_pool(CARTPOLE, num_envs=8) as pool:
        assert isinstance(pool, SyncWorkerPool) and pool.mode == "sync"
        assert pool.num_envs == 8
        pool.reset()
        assert [s.status for s in pool.recv(batch_size=8)[0]] == ["reset"] * 8


@pytest.mark.skipif(usable_cpus() < 2, reason="one CPU: auto never picks processes")
def test_auto_steps_costly_envs_in_processes_and_says_why() -> None:
    with get_worker_pool(functools.partial(BusyEnv, 0.002), num_envs=4) as pool:
        assert type(pool) is SharedMemoryPool and pool.mode == "shared_memory"
        assert "a step takes" in pool.mode_reason and "round trip" in pool.mode_reason
        pool.reset()
        assert len(pool.recv(batch_size=4, timeout=60)[0]) == 4


def test_the_probe_env_becomes_env_0_with_env_0_s_seed() -> None:
    def first_obs(pool: object) -> list[list[float]]:
        pool.reset()  # type: ignore[attr-defined]
        states, ids = pool.recv(batch_size=3)  # type: ignore[attr-defined]
        return [s.obs.tolist() for _, s in sorted(zip(ids, states, strict=True))]

    with (
        get_worker_pool(CARTPOLE, num_envs=3, mode="auto", seed=4) as auto,
        get_worker_pool(CARTPOLE, num_envs=3, mode="sync", seed=4) as sync,
    ):
        assert first_obs(auto) == first_obs(sync)


@pytest.mark.parametrize(
    ("mode", "kind"),
    [
        ("sync", SyncWorkerPool),
        ("thread", AsyncWorkerPool),
        ("process", AsyncWorkerPool),
        ("shared_memory", SharedMemoryPool),
    ],
)
def test_every_mode_by_name(mode: str, kind: type) -> None:
    with get_worker_pool(CountEnv, num_envs=2, mode=mode, step_timeout=30) as pool:
        assert isinstance(pool, kind) and pool.mode == mode
        pool.reset(seeds=[1, 2])
        assert sorted(pool.recv(batch_size=2, timeout=60)[1]) == [0, 1]


def test_bad_calls_say_what_to_pass() -> None:
    with pytest.raises(TypeError, match="needs num_envs="):
        get_worker_pool(CountEnv)
    with pytest.raises(ValueError, match="mode must be one of 'auto', 'sync'"):
        get_worker_pool(CountEnv, num_envs=2, mode="gpu")


def test_the_choice_weighs_the_saving_against_a_round_trip() -> None:
    assert choose_mode(ROUND_TRIP / 8, 8, cpus=2)[0] == "sync"
    assert choose_mode(ROUND_TRIP, 8, cpus=2)[0] == "shared_memory"
    assert choose_mode(None, 8, cpus=2) == (
        "shared_memory",
        "the env has no action_space to time steps with",
    )
    assert choose_mode(1.0, 1, cpus=8)[0] == "sync"


def test_step_seconds_needs_an_action_space() -> None:
    assert step_seconds(CountEnv()) is None
    assert step_seconds(BusyEnv(0.001)) >= 0.001


def test_a_step_near_the_crossover_stays_in_this_process() -> None:
    # CartPole's probe measured 10 µs in one process and 24 µs in the next on this
    # machine; at 24 µs, 8 envs over 2 processes would save about one round trip.
    assert choose_mode(24e-6, 8, cpus=2)[0] == "sync"
    assert choose_mode(ROUND_TRIP / 2, 8, cpus=2)[0] == "sync"  # saves exactly the margin
    mode, why = choose_mode(60e-6, 8, cpus=2)
    assert mode == "shared_memory" and "against 2 x a 100 µs round trip" in why
