"""Worker pools: completion order, batched recv/send, faults that leave the others running."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from kit.errors import AlreadyPendingError, ClosedPoolError, EnvPoolError, NothingPendingError
from kit.rl.choose import get_worker_pool
from kit.rl.pool import AsyncWorkerPool, SyncWorkerPool
from kit.rl.workers import AsyncEnvWorker, SyncEnvWorker, make_workers
from tests.rl.envs import CountEnv, EchoEnv, FaultyEnv, SlowBuildEnv

ROOT = Path(__file__).resolve().parents[2]


def test_answers_come_in_completion_order() -> None:
    slow = functools.partial(CountEnv, step_seconds=0.3)
    workers = [AsyncEnvWorker(slow, mode="thread"), AsyncEnvWorker(CountEnv, mode="thread")]
    with AsyncWorkerPool(workers) as pool:
        pool.reset(seeds=[5, 5])
        pool.recv(batch_size=2)
        pool.send([0, 0], [0, 1])
        state, slot = pool.get_state(timeout=10)
        assert slot == 1 and state.status == "ok"
        assert pool.get_state(timeout=10)[1] == 0


def test_recv_returns_the_first_batch_size_ready_and_send_takes_env_ids() -> None:
    envs = [functools.partial(CountEnv, step_seconds=s) for s in (0.0, 0.0, 0.4)]
    with AsyncWorkerPool([AsyncEnvWorker(f, mode="thread") for f in envs]) as pool:
        pool.reset(seeds=[8, 8, 8])
        states, ids = pool.recv(batch_size=3, timeout=10)
        assert sorted(ids) == [0, 1, 2] and {s.status for s in states} == {"reset"}
        pool.send([0, 0, 0], [0, 1, 2])
        states, ids = pool.recv(batch_size=2, timeout=10)
        assert sorted(ids) == [0, 1]
        assert pool.pending == [2]
        with pytest.raises(AlreadyPendingError, match="already has a command in flight"):
            pool.send_action(0, 2)
        assert pool.recv(timeout=10)[1] == [2]


def test_sync_pool_answers_in_the_order_sent() -> None:
    pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(CountEnv, 3))
    pool.send_reset(2, seed=1)
    pool.send_reset(0, seed=1)
    assert pool.get_state()[1] == 2
    assert pool.recv()[1] == [0]
    with pytest.raises(NothingPendingError, match="nothing in flight"):
        pool.recv()


def test_a_sync_pool_answers_the_same_whether_its_envs_step_at_send_or_are_awaited() -> None:
    # Sync workers alone take the quick path (each answer made at send); one thread
    # worker among them makes the pool await each worker in turn.
    quick = SyncWorkerPool(SyncEnvWorker.from_env_fn(CountEnv, 3, seed=4))
    mixed_workers = SyncEnvWorker.from_env_fn(CountEnv, 3, seed=4)
    mixed_workers[1] = AsyncEnvWorker(CountEnv, mixed_workers[1].seed, mode="thread")
    awaited = SyncWorkerPool(mixed_workers)
    assert type(quick) is not type(awaited)
    try:
        for pool in (quick, awaited):
            pool.reset()
        answers = []
        for pool in (quick, awaited):
            states, slots = pool.recv(batch_size=3, timeout=30)
            pool.send([1, 1, 1], slots)
            more, again = pool.recv(batch_size=3, timeout=30)
            answers.append(
                (
                    sorted(
                        (slot, repr(s.obs), str(s.status))
                        for s, slot in zip(states, slots, strict=True)
                    ),
                    sorted(
                        (slot, repr(s.obs), s.reward) for s, slot in zip(more, again, strict=True)
                    ),
                )
            )
        assert answers[0] == answers[1]
    finally:
        quick.cleanup()
        awaited.cleanup()


@pytest.mark.parametrize(
    ("fault", "mode", "status"),
    [
        ("raise", "sync", "env_error"),
        ("raise", "thread", "env_error"),
        ("raise", "process", "env_error"),
        ("exit", "process", "env_error"),
        ("kill", "process", "env_error"),
        ("segfault", "process", "env_error"),
        ("hang", "thread", "timeout"),
        ("hang", "process", "timeout"),
        ("reward", "sync", "env_error"),
        ("reward", "thread", "env_error"),
        ("reward", "process", "env_error"),
    ],
)
def test_one_faulty_env_is_rebuilt_and_the_others_go_on(fault: str, mode: str, status: str) -> None:
    env_fn = functools.partial(FaultyEnv, fault, frozenset({13}))
    workers = make_workers(env_fn, 3, mode=mode)
    with get_worker_pool(workers, step_timeout=1.0) as pool:
        pool.reset(seeds=[13, 4, 5])
        states, _ = pool.recv(batch_size=3, timeout=60)
        assert [s.status for s in states] == ["reset"] * 3
        seen: dict[int, list[str]] = {0: [], 1: [], 2: []}
        for _ in range(3):
            pool.send([0] * 3, [0, 1, 2])
            states, ids = pool.recv(batch_size=3, timeout=60)
            for state, slot in zip(states, ids, strict=True):
                seen[slot].append(state.status)
            for slot in [i for i, s in zip(ids, states, strict=True) if s.fault]:
                pool.send_reset(slot, seed=4)  # the rebuilt slot starts a new episode
                assert pool.recv(batch_size=1, timeout=60)[0][0].status == "reset"
        assert seen[0][:2] == ["ok", status]
        assert seen[1] == seen[2] == ["ok", "ok", "ok"]
        assert pool.restarts == [1, 0, 0]
        assert pool.faults[0][:2] == (0, status)
        if fault == "reward":
            assert (
                "env.step returned the reward 'one' (str); a reward must be a number"
                in (pool.faults[0][2])
            )


@pytest.mark.parametrize("mode", ["thread", "process"])
@pytest.mark.parametrize("force_sync", [False, True])
def test_a_slow_build_is_not_a_step_timeout(mode: str, force_sync: bool) -> None:
    env_fn = functools.partial(SlowBuildEnv, 1.5)
    workers = make_workers(env_fn, 2, mode=mode)
    with get_worker_pool(workers, force_sync, step_timeout=1.0) as pool:
        pool.reset(seeds=[1, 2])
        states, _ = pool.recv(batch_size=2, timeout=60)
        assert [s.status for s in states] == ["reset", "reset"]
        pool.send([0, 0], [0, 1])
        states, _ = pool.recv(batch_size=2, timeout=60)
        assert [s.status for s in states] == ["ok", "ok"]
        assert pool.restarts == [0, 0]
        assert pool.faults == []


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_build_timeout_bounds_a_build_that_hangs(mode: str) -> None:
    env_fn = functools.partial(SlowBuildEnv, 2.0)  # far past the bound
    workers = make_workers(env_fn, 1, mode=mode)
    with get_worker_pool(workers, step_timeout=1.0, build_timeout=0.5, max_restarts=5) as pool:
        pool.send_reset(0, seed=1)
        state, slot = pool.get_state(timeout=60)
        assert (state.status, slot) == ("timeout", 0)
        assert state.error == "env 0 was not built within build_timeout=0.5 s"
        assert pool.restarts == [1]


@pytest.mark.parametrize("mode", ["sync", "thread", "process"])
def test_text_actions_reach_the_env_even_reset_and_close(mode: str) -> None:
    with get_worker_pool(make_workers(EchoEnv, 2, mode=mode), step_timeout=30) as pool:
        pool.reset()
        pool.recv(batch_size=2, timeout=60)
        pool.send(["reset", "close"], [0, 1])
        states, ids = pool.recv(batch_size=2, timeout=60)
        said = {slot: (s.status, s.obs) for s, slot in zip(states, ids, strict=True)}
        assert said == {0: ("ok", "reset"), 1: ("ok", "close")}
        pool.send_step("reset", 0)
        assert pool.get_state(timeout=60)[0].obs == "reset"


def test_the_ml_starter_words_still_reset_and_close() -> None:
    pool = get_worker_pool(make_workers(EchoEnv, 2, mode="sync"))
    pool.send_action("reset", 0)
    assert pool.get_state()[0].status == "reset"
    pool.send_action("close", 1)
    assert pool.pending == []
    pool.cleanup()


def test_a_spent_restart_budget_raises_naming_the_env_and_the_error() -> None:
    env_fn = functools.partial(FaultyEnv, "raise", frozenset({13}))
    pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(env_fn, 2), max_restarts=1)

    def play_to_the_fault() -> str:
        pool.send_reset(0, seed=13)
        pool.recv()
        pool.send_action(0, 0)
        pool.get_state()
        pool.send_action(0, 0)
        return pool.get_state()[0].status

    assert play_to_the_fault() == "env_error"  # rebuilt: the one restart allowed
    with pytest.raises(EnvPoolError) as info:
        play_to_the_fault()
    message = str(info.value)
    assert "env 0 failed (env_error: RuntimeError: env blew up on seed 13)" in message
    assert "max_restarts=1" in message and "raise max_restarts" in message


def test_get_worker_pool_picks_async_only_for_async_workers() -> None:
    sync = SyncEnvWorker.from_env_fn(CountEnv, 2)
    assert isinstance(get_worker_pool(sync), SyncWorkerPool)
    threads = AsyncEnvWorker.from_env_fn(CountEnv, 2, mode="thread")
    assert type(get_worker_pool(threads)) is AsyncWorkerPool
    assert isinstance(get_worker_pool(threads, force_sync=True), SyncWorkerPool)
    with pytest.raises(TypeError, match="AsyncWorkerPool needs AsyncEnvWorker"):
        AsyncWorkerPool(sync)
    for worker in threads:
        worker.cleanup()


def test_cleanup_after_ctrl_c_leaves_no_child_process() -> None:
    script = textwrap.dedent(
        """
        import functools, os, sys, time
        import psutil
        from kit.rl.pool import AsyncWorkerPool
        from kit.rl.workers import AsyncEnvWorker
        from tests.rl.envs import CountEnv

        if __name__ == "__main__":
            workers = AsyncEnvWorker.from_env_fn(
                functools.partial(CountEnv, step_seconds=60), 3, mode="process")
            pool = AsyncWorkerPool(workers)
            pool.reset(seeds=[1, 2, 3])
            pool.recv(batch_size=3, timeout=120)
            pool.send([0, 0, 0], [0, 1, 2])
            print("children", len(psutil.Process().children(recursive=True)), flush=True)
            try:
                pool.recv(timeout=120)
            except KeyboardInterrupt:
                pool.cleanup()
                # multiprocessing's fork server and resource tracker stay until exit; env
                # processes must not. They are the fork server's children, forked with its
                # command line: a helper is one this process started.
                helpers = ("resource_tracker", "forkserver")
                me = psutil.Process()
                alive = [
                    p for p in me.children(recursive=True)
                    if p.status() != "zombie"
                    and not (p.ppid() == me.pid
                             and any(h in " ".join(p.cmdline()) for h in helpers))
                ]
                print("after cleanup", len(alive), flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("children"), line
    kids = psutil.Process(proc.pid).children(recursive=True)
    assert len(kids) >= 3
    time.sleep(0.3)
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert time.monotonic() - began < 30
    assert "after cleanup 0" in out
    _, alive = psutil.wait_procs(kids, timeout=10)
    assert alive == []


def test_the_old_names_are_aliases_of_num_envs_and_env_index() -> None:
    with pytest.warns(DeprecationWarning, match=r"from_env_fn\(num_workers=...\) is now"):
        workers = SyncEnvWorker.from_env_fn(CountEnv, num_workers=2)
    pool = SyncWorkerPool(workers)
    with pytest.warns(DeprecationWarning, match=r"send_reset\(worker_id=...\)"):
        pool.send_reset(worker_id=1, seed=3)
    assert pool.get_state()[1] == 1
    with pytest.warns(DeprecationWarning, match=r"send\(env_ids=...\) is now send\(env_indices"):
        pool.send([0], env_ids=[1])
    assert pool.get_state()[1] == 1
    with pytest.raises(TypeError, match="got both worker_id= and env_index="):
        pool.send_action(0, env_index=0, worker_id=0)
    pool.cleanup()


@pytest.mark.parametrize("mode", ["sync", "thread", "process", "shared_memory"])
def test_a_closed_pool_refuses_every_command_the_same_way_in_every_mode(mode: str) -> None:
    """Issue 25, 14: a closed pool answered three different ways by mode."""
    pool = get_worker_pool(CountEnv, num_envs=2, mode=mode)
    pool.reset(seeds=[1, 2])
    pool.recv(batch_size=2, timeout=60)
    pool.cleanup()
    calls = {
        "send": lambda: pool.send([0, 0], [0, 1]),
        "send_step": lambda: pool.send_step(0, 0),
        "reset": pool.reset,
        "recv": lambda: pool.recv(timeout=1),
        "get_state": lambda: pool.get_state(timeout=1),
    }
    for name, call in calls.items():
        with pytest.raises(
            ClosedPoolError, match=r"^this pool is closed \(cleanup\(\) or close\(\)"
        ):
            call()
        assert pool.closed, name
    pool.cleanup()  # closing twice is no error
