"""Kit's env pools and Dask collector side by side with gymnasium's vector envs (``make bench``).

1. CartPole-v1, 8 envs, random actions, env steps per second: gymnasium
   ``SyncVectorEnv`` and ``AsyncVectorEnv`` (shared memory, its default) vs
   Kit's pool with ``mode="auto"`` (it picks in-process stepping for a step this
   cheap), ``SharedMemoryPool`` (2 processes x 4 envs), ``AsyncWorkerPool``
   (a process per env), the pool under a ``SampleCollector`` and the
   ``DistributedCollector`` (LocalCluster, 2 workers x 4 envs).
2. The same with an env whose step burns 1 ms of CPU (a simulator): the
   vector envs vs Kit's auto pool and shared-memory pool, and the
   ``DistributedCollector`` on 2 workers vs a collector in one process.
3. Reliability: 200 episodes requested from 8 envs of which about 5% crash
   their process (``os._exit``) mid-episode: how many come back, and how; and
   envs that take 1.5 s to build under ``step_timeout=1``: spurious timeouts.

Results are printed and written to benchmarks/results/rl.json (the manual's
performance page is made from it).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import kit
from kit.rl import DistributedCollector, EnvPoolProvider, EpisodeCollector, SampleCollector
from kit.rl.choose import get_worker_pool
from kit.rl.pool import AsyncWorkerPool, WorkerPool
from kit.rl.shared import SharedMemoryPool
from kit.rl.workers import AsyncEnvWorker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results

RESULTS = Path(__file__).resolve().parent / "results"
ENVS = 8
STEPS = 40_000
BUSY_STEPS = 2_000
BUSY_EPISODES = 240
REPEATS = 3
PARALLEL = {"env": "local", "n_workers": 2}


def make_cartpole() -> Any:
    return gym.make("CartPole-v1")


class BusyCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole whose step burns ``busy`` seconds of CPU first (a costly simulator step)."""

    def __init__(self, busy: float = 0.001) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.busy = busy

    def step(self, action: Any) -> Any:
        end = time.thread_time() + self.busy
        while time.thread_time() < end:
            pass
        return self.env.step(action)


class SlowBuildCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole that takes 1.5 s to build (loading a simulator's assets)."""

    def __init__(self) -> None:
        time.sleep(1.5)
        super().__init__(gym.make("CartPole-v1"))


class CrashingCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole whose process dies (``os._exit``) at step 5 of episodes with seed % 20 == 0."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.t = 0
        self.doomed = False

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        self.t = 0
        self.doomed = seed is not None and seed % 20 == 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self.t += 1
        if self.doomed and self.t == 5:
            os._exit(1)
        return self.env.step(action)


def random_policy(observations: list[Any], rngs: list[np.random.Generator]) -> list[int]:
    return [int(rng.integers(2)) for rng in rngs]


class BusyProvider(EnvPoolProvider):
    """Dask workers' envs: BusyCartPole."""

    def env_fn(self) -> Any:
        return BusyCartPole


def make_random_policy(weights: Any) -> Any:
    return random_policy


def best(fn: Any) -> float:
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def vector_steps(cls: Any, env_fn: Any, steps: int) -> float:
    envs = cls([env_fn] * ENVS)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)

    def run() -> None:
        for _ in range(steps // ENVS):
            envs.step(rng.integers(2, size=ENVS))

    seconds = best(run)
    envs.close()
    return steps / seconds


def drive(pool: WorkerPool, steps: int, rng: np.random.Generator) -> None:
    """Step the envs with random actions as they answer; reset those whose episode ended."""
    done = 0
    while done < steps:
        states, ids = pool.recv()
        done += len(ids)
        actions = rng.integers(2, size=len(ids))  # numpy ints, as the vector envs get
        go, where = [], []
        for state, slot, action in zip(states, ids, actions, strict=True):
            if state.done:
                pool.send_reset(slot)
            else:
                go.append(action)
                where.append(slot)
        if go:
            pool.send(go, where)


def pool_steps(pool: WorkerPool, steps: int) -> float:
    with pool:
        pool.reset()
        pool.recv(batch_size=ENVS, timeout=120)
        rng = np.random.default_rng(0)
        pool.send(list(rng.integers(2, size=ENVS)), list(range(ENVS)))
        return steps / best(lambda: drive(pool, steps, rng))


def collector_steps(pool: WorkerPool, steps: int) -> float:
    with pool:
        collector = SampleCollector(pool, seed=0)
        collector.collect(ENVS, random_policy)
        return steps / best(lambda: collector.collect(steps, random_policy))


def episodes_steps(collect: Any) -> float:
    """Steps per second of ``collect()``, which returns episodes (best of the repeats)."""
    rates = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        episodes = collect()
        rates.append(sum(e.length for e in episodes) / (time.perf_counter() - began))
    return max(rates)


def dask_collector(provider: EnvPoolProvider, n_episode: int) -> float:
    collector = DistributedCollector(provider, make_random_policy, parallel=PARALLEL)
    try:
        collector.set_weights(None, 0)
        collector.collect(8)  # workers up, envs built
        return episodes_steps(lambda: collector.collect(n_episode))
    finally:
        kit.shutdown()


def shared(env_fn: Any, **kwargs: Any) -> SharedMemoryPool:
    return SharedMemoryPool(env_fn, ENVS, envs_per_process=ENVS // 2, **kwargs)


def cartpole_rows() -> tuple[dict[str, float], str]:
    auto = get_worker_pool(make_cartpole, num_envs=ENVS)
    chose = f"{auto.mode} ({auto.mode_reason})"
    rows = {
        "gymnasium SyncVectorEnv": vector_steps(gym.vector.SyncVectorEnv, make_cartpole, STEPS),
        "gymnasium AsyncVectorEnv (shared memory)": vector_steps(
            gym.vector.AsyncVectorEnv, make_cartpole, STEPS
        ),
        "Kit pool, mode='auto'": pool_steps(auto, STEPS),
        "Kit SharedMemoryPool, 2 processes x 4 envs": pool_steps(shared(make_cartpole), STEPS),
        "Kit AsyncWorkerPool, a process per env": pool_steps(
            AsyncWorkerPool(AsyncEnvWorker.from_env_fn(make_cartpole, ENVS, mode="process")),
            STEPS,
        ),
        "Kit auto pool + SampleCollector": collector_steps(
            get_worker_pool(make_cartpole, num_envs=ENVS), STEPS
        ),
        "Kit DistributedCollector, 2 workers x 4 envs": dask_collector(
            EnvPoolProvider({"env": "CartPole-v1", "num_envs": ENVS // 2}), STEPS // 22
        ),
    }
    return rows, chose


def busy_rows() -> tuple[dict[str, float], str]:
    auto = get_worker_pool(BusyCartPole, num_envs=ENVS)
    chose = f"{auto.mode} ({auto.mode_reason})"
    one_process = get_worker_pool(BusyCartPole, num_envs=ENVS, mode="sync")
    rows = {
        "gymnasium SyncVectorEnv": vector_steps(gym.vector.SyncVectorEnv, BusyCartPole, BUSY_STEPS),
        "gymnasium AsyncVectorEnv (shared memory)": vector_steps(
            gym.vector.AsyncVectorEnv, BusyCartPole, BUSY_STEPS
        ),
        "Kit pool, mode='auto'": pool_steps(auto, BUSY_STEPS),
        "Kit SharedMemoryPool, 2 processes x 4 envs": pool_steps(shared(BusyCartPole), BUSY_STEPS),
        "Kit EpisodeCollector, 8 envs in one process": episodes_steps(
            functools.partial(
                EpisodeCollector(one_process, seed=0).collect, BUSY_EPISODES, random_policy
            )
        ),
        "Kit DistributedCollector, 2 workers x 4 envs": dask_collector(
            BusyProvider({"num_envs": ENVS // 2}), BUSY_EPISODES
        ),
    }
    one_process.close()
    return rows, chose


def crashes(pool: WorkerPool) -> dict[str, Any]:
    began = time.perf_counter()
    with pool:
        episodes = EpisodeCollector(pool, seed=0).collect(200, random_policy)
    statuses = [e.status for e in episodes]
    return {
        "requested": 200,
        "returned": len(episodes),
        "ok": sum(e.ok for e in episodes),
        "broken": statuses.count("env_error"),
        "restarts": sum(pool.restarts),
        "seconds": time.perf_counter() - began,
        "outcome": "completed",
    }


def reliability_gym() -> dict[str, Any]:
    envs = gym.vector.AsyncVectorEnv([CrashingCartPole] * ENVS)
    finished = 0
    outcome = "completed"
    began = time.perf_counter()
    try:
        # Env 0 gets seed 0: its first episode crashes (autoresets are unseeded, so no other).
        envs.reset(seed=list(range(ENVS)))
        rng = np.random.default_rng(0)
        while finished < 200:
            _, _, terminated, truncated, _ = envs.step(rng.integers(2, size=ENVS))
            finished += int(np.count_nonzero(terminated | truncated))
    except Exception as exc:  # what one sub-env crash does to the vector env
        first = str(exc).strip().splitlines()[0][:80] if str(exc).strip() else "(no message)"
        outcome = f"raised {type(exc).__name__}: {first}; the vector env is unusable"
    finally:
        with contextlib.suppress(Exception):
            envs.close(terminate=True)
    return {
        "requested": 200,
        "returned": finished,
        "ok": finished,
        "broken": 0,
        "restarts": 0,
        "seconds": time.perf_counter() - began,
        "outcome": outcome,
    }


def slow_builds(pool: WorkerPool) -> dict[str, Any]:
    """Episodes from envs that take 1.5 s to build, under step_timeout=1: timeouts seen."""
    with pool:
        episodes = EpisodeCollector(pool, seed=0).collect(40, random_policy)
        timeouts = sum(status == "timeout" for _, status, _ in pool.faults)
    return {"episodes": len(episodes), "ok": sum(e.ok for e in episodes), "timeouts": timeouts}


def main() -> int:
    machine = describe(("gymnasium", "dask", "distributed"))
    cartpole, cartpole_chose = cartpole_rows()
    busy, busy_chose = busy_rows()
    reliability = {
        "Kit AsyncWorkerPool": crashes(
            AsyncWorkerPool(
                AsyncEnvWorker.from_env_fn(CrashingCartPole, ENVS, mode="process"),
                max_restarts=None,
            )
        ),
        "Kit SharedMemoryPool, 2 x 4": crashes(shared(CrashingCartPole, max_restarts=None)),
        "gymnasium AsyncVectorEnv": reliability_gym(),
    }
    slow = {
        "Kit AsyncWorkerPool": slow_builds(
            AsyncWorkerPool(
                AsyncEnvWorker.from_env_fn(SlowBuildCartPole, ENVS, mode="process"),
                step_timeout=1.0,
            )
        ),
        "Kit SharedMemoryPool, 2 x 4": slow_builds(shared(SlowBuildCartPole, step_timeout=1.0)),
    }
    results = {
        "machine": machine,
        "cartpole_steps_per_second": cartpole,
        "cartpole_auto_chose": cartpole_chose,
        "busy_steps_per_second": busy,
        "busy_auto_chose": busy_chose,
        "reliability": reliability,
        "slow_builds": slow,
    }
    shm = "Kit SharedMemoryPool, 2 processes x 4 envs"
    sync, asyncv = "gymnasium SyncVectorEnv", "gymnasium AsyncVectorEnv (shared memory)"
    dask = "Kit DistributedCollector, 2 workers x 4 envs"
    single = "Kit EpisodeCollector, 8 envs in one process"
    ratios = {
        "CartPole: Kit auto pool / SyncVectorEnv": cartpole["Kit pool, mode='auto'"]
        / cartpole[sync],
        "CartPole: Kit shared-memory pool / AsyncVectorEnv": cartpole[shm] / cartpole[asyncv],
        "1 ms env: Kit shared-memory pool / SyncVectorEnv": busy[shm] / busy[sync],
        "1 ms env: Kit shared-memory pool / AsyncVectorEnv": busy[shm] / busy[asyncv],
        "1 ms env: DistributedCollector / one-process collector": busy[dask] / busy[single],
    }
    results["ratios"] = ratios
    targets = dict(zip(ratios, (1.0, 1.5, 1.8, 1.0, 1.7), strict=True))
    checks = {f"{name} >= {target}": ratios[name] >= target for name, target in targets.items()}
    checks["every requested episode comes back under crashes"] = all(
        r["returned"] == 200 for name, r in reliability.items() if name.startswith("Kit")
    )
    checks["slow-building envs: 0 spurious timeouts"] = all(
        r["timeouts"] == 0 for r in slow.values()
    )

    def table(rows: dict[str, float]) -> list[str]:
        return [
            "| method | steps/s |",
            "|---|---|",
            *[f"| {k} | {v:,.0f} |" for k, v in rows.items()],
        ]

    title, packages = "RL benchmark", ("gymnasium", "dask", "distributed")
    lines = [
        f"Command: `make bench` or `python benchmarks/bench_rl.py` (best of {REPEATS} runs each).",
        "",
        f"## CartPole-v1, {ENVS} envs, random actions",
        "",
        *table(cartpole),
        "",
        f"`mode='auto'` chose {cartpole_chose}.",
        "",
        f"## An env whose step burns 1 ms of CPU (CartPole inside), {ENVS} envs",
        "",
        *table(busy),
        "",
        f"`mode='auto'` chose {busy_chose}.",
        "",
        "## Ratios",
        "",
        "| ratio | value |",
        "|---|---|",
        *[f"| {k} | {v:.2f}x |" for k, v in ratios.items()],
        "",
        "The shared-memory pool steps each process's envs as one batch and passes "
        "observations, rewards, flags and actions through shared memory; answers come back a "
        "process at a time, so the caller acts on one process's envs while the other steps. "
        "The Dask collector runs whole episodes on in-process envs on each worker and returns "
        "them as task results.",
        "",
        f"## Reliability: 200 episodes from {ENVS} envs, ~5% of episodes crash their process",
        "",
        "| method | requested | returned | ok | broken (reported) | env restarts | outcome |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {name} | {r['requested']} | {r['returned']} | {r['ok']} | {r['broken']} "
            f"| {r['restarts']} | {r['outcome']} |"
            for name, r in reliability.items()
        ],
        "",
        "A crash in the shared-memory pool also breaks the episodes of the other envs in that "
        "process; each is returned with status env_error, none is lost.",
        "",
        "## Slow builds: envs that take 1.5 s to build, step_timeout=1 s, 40 episodes",
        "",
        "| method | episodes | ok | timeouts |",
        "|---|---|---|---|",
        *[f"| {k} | {r['episodes']} | {r['ok']} | {r['timeouts']} |" for k, r in slow.items()],
        "",
    ]
    write_results(RESULTS, "rl", results, lines, checks, title=title, packages=packages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
