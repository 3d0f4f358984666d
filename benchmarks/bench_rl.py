"""Kit's env pools and Dask collector side by side with gymnasium's vector envs (``make bench``).

1. Env steps per second, CartPole-v1, 8 envs, random actions: gymnasium
   ``SyncVectorEnv`` and ``AsyncVectorEnv`` vs Kit's ``AsyncWorkerPool``
   (8 env processes; raw send/recv, and a ``SampleCollector`` recording
   transitions) vs Kit's ``DistributedCollector`` (LocalCluster, 2 workers x
   4 envs, whole episodes with their transitions).
2. Reliability: 200 episodes requested from 8 envs of which about 5% crash
   their process (``os._exit``) mid-episode: how many come back, and how.

Results are printed and written to benchmarks/results/rl.{json,md}.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import kit
from kit.rl import (
    AsyncEnvWorker,
    AsyncWorkerPool,
    DistributedCollector,
    EnvPoolProvider,
    EpisodeCollector,
    SampleCollector,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, machine_line, write_results

RESULTS = Path(__file__).resolve().parent / "results"
ENVS = 8
STEPS = 40_000
REPEATS = 3
PARALLEL = {"env": "local", "n_workers": 2}


def make_cartpole() -> Any:
    return gym.make("CartPole-v1")


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


def make_random_policy(weights: Any) -> Any:
    return random_policy


def best(fn: Any) -> float:
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def gym_vector(cls: Any) -> float:
    envs = cls([make_cartpole] * ENVS)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)

    def run() -> None:
        for _ in range(STEPS // ENVS):
            envs.step(rng.integers(2, size=ENVS))

    seconds = best(run)
    envs.close()
    return STEPS / seconds


def kit_pool_raw() -> float:
    workers = AsyncEnvWorker.from_env_fn(make_cartpole, ENVS, mode="process")
    with AsyncWorkerPool(workers) as pool:
        pool.reset()
        pool.recv(batch_size=ENVS, timeout=120)
        rng = np.random.default_rng(0)
        pool.send([int(a) for a in rng.integers(2, size=ENVS)], list(range(ENVS)))

        def run() -> None:
            steps = 0
            while steps < STEPS:
                states, ids = pool.recv()
                steps += len(ids)
                actions = []
                for state, slot in zip(states, ids, strict=True):
                    if state.done:
                        pool.send_reset(slot)
                    else:
                        actions.append((int(rng.integers(2)), slot))
                if actions:
                    pool.send([a for a, _ in actions], [s for _, s in actions])

        return STEPS / best(run)


def kit_pool_collector() -> float:
    workers = AsyncEnvWorker.from_env_fn(make_cartpole, ENVS, mode="process")
    with AsyncWorkerPool(workers) as pool:
        collector = SampleCollector(pool, seed=0)
        collector.collect(ENVS, random_policy)
        return STEPS / best(lambda: collector.collect(STEPS, random_policy))


def kit_dask_collector() -> float:
    provider = EnvPoolProvider({"env": "CartPole-v1", "num_envs": ENVS // 2})
    collector = DistributedCollector(provider, make_random_policy, parallel=PARALLEL)
    collector.set_weights(None, 0)
    collector.collect(8)
    episodes = 0
    steps = 0

    def run() -> None:
        nonlocal episodes, steps
        began = collector.envstep
        # ~22 steps an episode with random actions: enough episodes for STEPS steps.
        collector.collect(STEPS // 22)
        steps = collector.envstep - began

    seconds = best(run)
    kit.shutdown()
    return steps / seconds


def reliability_kit() -> dict[str, Any]:
    workers = AsyncEnvWorker.from_env_fn(CrashingCartPole, ENVS, mode="process")
    began = time.perf_counter()
    with AsyncWorkerPool(workers, max_restarts=None) as pool:
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


def main() -> int:
    machine = describe(("gymnasium", "dask", "distributed"))
    speed = {
        "gymnasium SyncVectorEnv": gym_vector(gym.vector.SyncVectorEnv),
        "gymnasium AsyncVectorEnv": gym_vector(gym.vector.AsyncVectorEnv),
        "Kit AsyncWorkerPool, send/recv": kit_pool_raw(),
        "Kit AsyncWorkerPool + SampleCollector": kit_pool_collector(),
        "Kit DistributedCollector, 2 workers x 4 envs": kit_dask_collector(),
    }
    reliability = {
        "Kit AsyncWorkerPool": reliability_kit(),
        "gymnasium AsyncVectorEnv": reliability_gym(),
    }
    results = {"machine": machine, "steps_per_second": speed, "reliability": reliability}
    target = speed["gymnasium AsyncVectorEnv"]
    checks = {
        "Kit async pool >= gymnasium AsyncVectorEnv": speed["Kit AsyncWorkerPool, send/recv"]
        >= target,
        "Kit Dask collector >= gymnasium AsyncVectorEnv": speed[
            "Kit DistributedCollector, 2 workers x 4 envs"
        ]
        >= target,
        "Kit returns every requested episode under crashes": reliability["Kit AsyncWorkerPool"][
            "returned"
        ]
        == 200,
    }
    lines = [
        "# RL benchmark",
        "",
        machine_line(machine, ("gymnasium", "dask", "distributed")),
        f"Command: `make bench` (best of {REPEATS} runs each).",
        "",
        f"## Env steps per second, CartPole-v1, {ENVS} envs, random actions",
        "",
        "| method | steps/s |",
        "|---|---|",
        *[f"| {name} | {value:,.0f} |" for name, value in speed.items()],
        "",
        "Kit's pool uses one process per env like AsyncVectorEnv (started from a fork server;"
        " gymnasium forks), but hands back whichever envs are ready instead of waiting for all"
        " of them, and sends numpy observations as raw bytes; the collector row includes"
        " building a Transition with its provenance per step; the Dask collector runs whole"
        " episodes on in-process envs on each worker and returns them as task results.",
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
    ]
    write_results(RESULTS, "rl", results, lines, checks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
