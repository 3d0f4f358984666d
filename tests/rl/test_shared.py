"""The shared-memory pool: several envs a process, same episodes, faults handled per env."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import psutil
import pytest

from kit.rl import EpisodeCollector
from kit.rl.choose import get_worker_pool
from kit.rl.pool import SyncWorkerPool
from kit.rl.shared import SharedMemoryPool
from kit.rl.workers import SyncEnvWorker
from tests.rl.envs import (
    BusyEnv,
    CountEnv,
    EchoEnv,
    FaultyEnv,
    SlowBuildEnv,
    UnpicklableInfoEnv,
    random_action,
    trajectory,
)

SPACED = functools.partial(BusyEnv, 0.0)  # a CountEnv with gymnasium spaces, no CPU burnt


def _segments() -> set[str]:
    return {p.name for p in Path("/dev/shm").iterdir() if not p.name.startswith("sem.")}


def test_episodes_match_a_pool_in_this_process_step_for_step() -> None:
    with SharedMemoryPool(SPACED, 5, envs_per_process=2) as pool:
        assert pool.num_processes == 3 and pool.num_envs == 5
        shared = EpisodeCollector(pool, seed=3).collect(20, random_action)
    with SyncWorkerPool(SyncEnvWorker.from_env_fn(SPACED, 2)) as pool:
        here = EpisodeCollector(pool, seed=3).collect(20, random_action)
    assert [trajectory(e) for e in shared] == [trajectory(e) for e in here]
    assert all(e.ok for e in shared)
    step = shared[0].transitions[0]
    assert step.obs.dtype == np.float64 and isinstance(step.reward, float) and step.info == {"t": 1}


def test_observations_and_actions_of_other_types_go_through_the_pipe() -> None:
    with SharedMemoryPool(EchoEnv, 2, envs_per_process=2) as pool:
        pool.reset()
        pool.recv(batch_size=2, timeout=60)
        pool.send(["reset", "close"], [0, 1])
        states, ids = pool.recv(batch_size=2, timeout=60)
        said = {slot: (s.status, s.obs, s.reward) for s, slot in zip(states, ids, strict=True)}
        assert said == {0: ("ok", "reset", 5.0), 1: ("ok", "close", 5.0)}
    with SharedMemoryPool(CountEnv, 2, envs_per_process=2) as pool:  # no spaces: no views
        pool.reset(seeds=[1, 2])
        states, _ = pool.recv(batch_size=2, timeout=60)
        assert [s.obs.tolist() for s in states] == [[0.0, 1.0], [0.0, 2.0]]


@pytest.mark.parametrize("fault", ["exit", "kill", "segfault", "hang"])
def test_a_crashed_or_hung_process_restarts_and_reports_each_episode_it_broke(fault: str) -> None:
    env_fn = functools.partial(FaultyEnv, fault, frozenset({13}))
    with SharedMemoryPool(env_fn, 4, envs_per_process=2, step_timeout=2.0) as pool:
        pool.reset(seeds=[13, 20, 30, 40])  # env 0 fails at its second step; env 1 is its sibling
        assert sorted(pool.recv(batch_size=4, timeout=60)[1]) == [0, 1, 2, 3]
        pool.send([0] * 4, [0, 1, 2, 3])
        pool.recv(batch_size=4, timeout=60)
        pool.send([0, 0], [0, 2])  # env 1 idle: its answer is in the caller's hands
        states, ids = pool.recv(batch_size=2, timeout=60)
        by_env = dict(zip(ids, states, strict=True))
        assert by_env[0].fault and by_env[2].status == "ok"
        assert pool.restarts == [1, 0, 0, 0]
        # The idle sibling lost its env with the process: its next step says so.
        pool.send_step(0, 1)
        state, slot = pool.get_state(timeout=60)
        assert slot == 1 and state.status == "env_error"
        assert "env 1 was rebuilt with its process" in (state.error or "")
        assert "reset it" in (state.error or "")
        pool.reset(seeds=[5, 6, 7, 8])
        states, _ = pool.recv(batch_size=4, timeout=60)
        assert [s.status for s in states] == ["reset"] * 4
        assert [f[0] for f in pool.faults] == [0, 1]
        assert sum(pool.restarts) == 1


def test_a_pending_sibling_of_a_crashed_env_is_reported_with_the_reason() -> None:
    env_fn = functools.partial(FaultyEnv, "kill", frozenset({13}))
    with SharedMemoryPool(env_fn, 2, envs_per_process=2) as pool:
        pool.reset(seeds=[13, 20])
        pool.recv(batch_size=2, timeout=60)
        for _ in range(2):
            pool.send([0, 0], [0, 1])
            states, ids = pool.recv(batch_size=2, timeout=60)
        statuses = {slot: s.status for s, slot in zip(states, ids, strict=True)}
        assert statuses == {0: "env_error", 1: "env_error"}
        assert all("died by signal SIGKILL" in (s.error or "") for s in states)


@pytest.mark.parametrize("fault", ["raise", "reward"])
def test_an_exception_in_one_env_rebuilds_that_env_alone(fault: str) -> None:
    env_fn = functools.partial(FaultyEnv, fault, frozenset({13}))
    with SharedMemoryPool(env_fn, 2, envs_per_process=2) as pool:
        pid = pool.groups[0].process.pid
        pool.reset(seeds=[13, 20])
        pool.recv(batch_size=2, timeout=60)
        seen: dict[int, list[str]] = {0: [], 1: []}
        for _ in range(2):
            pool.send([0, 0], [0, 1])
            states, ids = pool.recv(batch_size=2, timeout=60)
            for state, slot in zip(states, ids, strict=True):
                seen[slot].append(state.status)
        assert seen == {0: ["ok", "env_error"], 1: ["ok", "ok"]}
        assert pool.groups[0].process.pid == pid  # the sibling kept its episode
        if fault == "reward":
            assert "a reward must be a number" in pool.faults[0][2]
        pool.send_reset(0, seed=1)
        assert pool.get_state(timeout=60)[0].status == "reset"
        assert pool.restarts == [1, 0]


def test_every_requested_episode_comes_back_under_crashes() -> None:
    env_fn = functools.partial(FaultyEnv, "exit", frozenset(), bad_every=7, length_mod=5)
    with SharedMemoryPool(env_fn, 4, envs_per_process=2, max_restarts=None) as pool:
        episodes = EpisodeCollector(pool, seed=0).collect(40, random_action)
    assert [e.episode_id for e in episodes] == list(range(40))
    broken = [e for e in episodes if not e.ok]
    assert broken and all(e.status == "env_error" and e.error for e in broken)


def test_a_slow_build_is_not_a_step_timeout_and_build_timeout_bounds_it() -> None:
    with SharedMemoryPool(
        functools.partial(SlowBuildEnv, 1.5), 2, envs_per_process=2, step_timeout=1.0
    ) as pool:
        pool.reset(seeds=[1, 2])
        assert [s.status for s in pool.recv(batch_size=2, timeout=60)[0]] == ["reset"] * 2
        assert pool.faults == []
    with SharedMemoryPool(
        functools.partial(SlowBuildEnv, 2.0), 1, build_timeout=0.5, max_restarts=5
    ) as pool:
        pool.send_reset(0, seed=1)
        state, _ = pool.get_state(timeout=60)
        assert (state.status, state.error) == (
            "timeout",
            "env 0 was not built within build_timeout=0.5 s",
        )


def test_an_answer_that_cannot_be_pickled_is_that_env_s_error() -> None:
    with SharedMemoryPool(UnpicklableInfoEnv, 2, envs_per_process=2) as pool:
        pool.reset(seeds=[13, 20])
        pool.recv(batch_size=2, timeout=60)
        pool.send([0, 0], [0, 1])
        states, ids = pool.recv(batch_size=2, timeout=60)
        statuses = {slot: s.status for s, slot in zip(states, ids, strict=True)}
        assert statuses == {0: "env_error", 1: "ok"}


def test_cleanup_leaves_no_process_and_no_shared_memory() -> None:
    before = _segments()
    pool = SharedMemoryPool(functools.partial(CountEnv, step_seconds=60), 4, envs_per_process=2)
    pool.reset(seeds=[1, 2, 3, 4])
    pool.recv(batch_size=4, timeout=60)
    pids = [group.process.pid for group in pool.groups]
    assert len(_segments() - before) == 2
    pool.send([0], [0])  # one process busy for a minute: killed, not waited for
    pool.cleanup()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert _segments() - before == set()


def test_a_factory_is_required_and_sizes_are_checked() -> None:
    with pytest.raises(TypeError, match="zero-argument callable"):
        SharedMemoryPool(CountEnv(), 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="envs_per_process must be at least 1"):
        SharedMemoryPool(CountEnv, 2, envs_per_process=0)


def test_get_worker_pool_builds_a_shared_memory_pool_by_name() -> None:
    with get_worker_pool(SPACED, num_envs=4, mode="shared_memory", envs_per_process=2) as pool:
        assert type(pool) is SharedMemoryPool and pool.num_processes == 2
        assert pool.mode == "shared_memory"


def test_a_pool_closed_before_its_processes_said_ready_leaves_no_shared_memory() -> None:
    before = _segments()
    for kill in (False, True):
        pool = SharedMemoryPool(SPACED, 4, envs_per_process=2)
        if kill:  # a process busy building, then killed
            pool.send_reset(0, seed=1)
        pool.cleanup()
    assert _segments() - before == set()


def test_a_shared_memory_pools_envs_are_slots_without_a_get_state_to_refuse() -> None:
    from kit.rl.workers import BaseEnvWorker, EnvSlot

    with SharedMemoryPool(CountEnv, 2, envs_per_process=2) as pool:
        slot = pool.workers[0]
        assert isinstance(slot, EnvSlot) and not isinstance(slot, BaseEnvWorker)
        assert not hasattr(slot, "get_state")  # its answers come through pool.recv()
        pool.reset()
        assert sorted(pool.recv(batch_size=2, timeout=60)[1]) == [0, 1]
