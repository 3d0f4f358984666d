"""Env workers: gymnasium semantics in every mode, faults reported as states."""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest

from kit.rl.workers import AsyncEnvWorker, SyncEnvWorker, make_workers
from tests.rl.envs import CountEnv, FaultyEnv

MODES = ["sync", "thread", "process"]


def one_worker(env_fn, mode: str, seed: int | None = 0):
    return make_workers(env_fn, 1, mode=mode, seed=seed)[0]


@pytest.mark.parametrize("mode", MODES)
def test_terminated_and_truncated_are_kept_apart_and_the_final_obs_is_kept(mode: str) -> None:
    for truncate in (False, True):
        worker = one_worker(functools.partial(CountEnv, truncate=truncate), mode)
        try:
            worker.send_reset(seed=3)  # 2 + 3 % 9 = 5 steps
            assert worker.get_state(timeout=30).status == "reset"
            states = []
            for _ in range(5):
                worker.send_action(0)
                states.append(worker.get_state(timeout=30))
            last = states[-1]
            assert (last.terminated, last.truncated) == (not truncate, truncate)
            assert not any(s.done for s in states[:-1])
            assert last.obs.tolist() == [5.0, 3.0]  # the true final observation, not a reset one
        finally:
            worker.cleanup()


def test_reset_without_a_seed_uses_the_workers_own_seed_once() -> None:
    workers = SyncEnvWorker.from_env_fn(CountEnv, 3, seed=7)
    seeds = [w.seed for w in workers]
    assert len(set(seeds)) == 3
    assert seeds == [w.seed for w in SyncEnvWorker.from_env_fn(CountEnv, 3, seed=7)]
    workers[0].send_action("reset")
    assert workers[0].get_state().obs[1] == seeds[0] % 1000


def test_an_env_instance_instead_of_a_factory_is_refused_with_the_fix() -> None:
    with pytest.raises(TypeError, match="pass the factory"):
        SyncEnvWorker(CountEnv())  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_an_exception_in_the_env_comes_back_as_a_state_with_its_traceback(mode: str) -> None:
    worker = one_worker(functools.partial(FaultyEnv, "raise", frozenset({4})), mode)
    try:
        worker.send_reset(seed=4)
        worker.get_state(timeout=30)
        worker.send_action(0)
        worker.get_state(timeout=30)
        worker.send_action(0)
        state = worker.get_state(timeout=30)
        assert state.status == "env_error" and state.fault and state.done
        assert "RuntimeError: env blew up on seed 4" in str(state.error)
        worker.restart()
        worker.send_reset(seed=1)
        assert worker.get_state(timeout=30).status == "reset"
    finally:
        worker.cleanup()


@pytest.mark.parametrize(
    ("fault", "reason"),
    [("exit", "exit code 3"), ("kill", "signal SIGKILL"), ("segfault", "signal SIGSEGV")],
)
def test_a_crashed_env_process_is_reported_and_rebuilt(fault: str, reason: str) -> None:
    worker = AsyncEnvWorker(functools.partial(FaultyEnv, fault, frozenset({4})), mode="process")
    try:
        worker.send_reset(seed=4)
        worker.get_state(timeout=30)
        for _ in range(2):
            worker.send_action(0)
            state = worker.get_state(timeout=30)
        assert state.status == "env_error"
        assert reason in str(state.error)
        assert not worker.alive
        worker.restart(hard=True)
        worker.send_reset(seed=1)
        assert worker.get_state(timeout=30).status == "reset"
    finally:
        worker.cleanup()


def test_a_factory_that_fails_reports_its_traceback_on_every_command() -> None:
    def broken() -> None:
        raise OSError("no simulator licence")

    worker = SyncEnvWorker(broken)
    worker.send_action("reset")
    state = worker.get_state()
    assert state.status == "env_error"
    assert "building the env failed" in str(state.error)
    assert "no simulator licence" in str(state.error)


def test_a_thread_worker_times_out_without_blocking_the_caller() -> None:
    worker = AsyncEnvWorker(functools.partial(CountEnv, step_seconds=2.0), mode="thread")
    try:
        worker.send_reset(seed=1)
        worker.get_state(timeout=10)
        worker.send_action(0)
        with pytest.raises(TimeoutError, match=r"no answer within 0\.05 s"):
            worker.get_state(timeout=0.05)
    finally:
        worker.cleanup()


def test_states_pickle_and_async_workers_accept_notebook_factories() -> None:
    state = SyncEnvWorker(CountEnv)
    state.send_reset(seed=2)
    assert pickle.loads(pickle.dumps(state.get_state())).status == "reset"

    def local_factory() -> CountEnv:  # a closure, as a notebook would define
        return CountEnv(length_mod=2)

    worker = AsyncEnvWorker(local_factory, mode="process")
    try:
        worker.send_reset(seed=0)
        assert np.array_equal(worker.get_state(timeout=60).obs, [0.0, 0.0])
    finally:
        worker.cleanup()


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'sync', 'thread' or 'process'"):
        make_workers(CountEnv, 2, mode="fork")
