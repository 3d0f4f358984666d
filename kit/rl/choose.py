"""Pick a pool for an env: in this process, a process per env, or several per process.

Stepping envs in other processes pays only when a batch of steps costs more
than the round trip to those processes; CartPole's 5 µs step never does,
a simulator's millisecond step always does. ``mode="auto"`` measures the
first steps of one env and decides.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from kit.rl.pool import AsyncWorkerPool, SyncWorkerPool, WorkerPool
from kit.rl.shared import SharedMemoryPool
from kit.rl.workers import (
    AsyncEnvWorker,
    BaseEnvWorker,
    EnvFn,
    SyncEnvWorker,
    _seeds,
    make_workers,
)

__all__ = ["get_worker_pool"]

#: Modes of :func:`get_worker_pool` given an env factory.
POOL_MODES = ("auto", "sync", "thread", "process", "shared_memory")
#: What a batch's round trip to an env process costs at least (a pipe write, a
#: wake-up, a read, on a busy machine): in-process stepping wins below it.
ROUND_TRIP = 100e-6
#: Processes are chosen only when they save this many round trips a batch. The
#: probe's step time is a few steps of one process: CartPole's measured 10 µs in
#: one process and 24 µs in the next on this machine, idle. Near the crossover
#: the two modes step about as fast, and the in-process one starts no process,
#: so a near tie goes to it.
MARGIN = 2
#: The first steps timed by ``mode="auto"``: this many, or this long, whichever ends first.
PROBE_STEPS, PROBE_SECONDS = 32, 0.25


def usable_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def step_seconds(env: Any, seed: int | None = 0) -> float | None:
    """Median wall time of an env's first steps with random actions; None if unmeasurable.

    The env is reset with ``seed`` first (and again whenever an episode ends).

    Examples
    --------
    >>> import gymnasium as gym
    >>> 0 < step_seconds(gym.make("CartPole-v1")) < 0.01
    True
    """
    space = getattr(env, "action_space", None)
    if space is None or not callable(getattr(space, "sample", None)):
        return None
    space.seed(seed)
    env.reset(seed=seed)
    times: list[float] = []
    began = time.perf_counter()
    while len(times) < PROBE_STEPS and time.perf_counter() - began < PROBE_SECONDS:
        action = space.sample()
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        times.append(time.perf_counter() - start)
        if terminated or truncated:
            env.reset()
    return statistics.median(times)


def choose_mode(step: float | None, num_envs: int, cpus: int | None = None) -> tuple[str, str]:
    """Return ``(mode, why)``, ``"sync"`` or ``"shared_memory"``, for a ``step`` of that many s.

    Examples
    --------
    >>> choose_mode(5e-6, 8, cpus=2)[0], choose_mode(1e-3, 8, cpus=2)[0]
    ('sync', 'shared_memory')
    >>> choose_mode(1e-3, 8, cpus=1)
    ('sync', 'one CPU: other processes cannot step envs at the same time')
    """
    cpus = usable_cpus() if cpus is None else cpus
    if multiprocessing.current_process().daemon:
        return "sync", "this is a daemonic process (e.g. a Dask worker): it cannot start processes"
    if cpus < 2 or num_envs < 2:
        what = "one CPU" if cpus < 2 else "one env"
        return "sync", f"{what}: other processes cannot step envs at the same time"
    if step is None:
        return "shared_memory", "the env has no action_space to time steps with"
    processes = min(cpus, num_envs)
    saved = num_envs * step * (1 - 1 / processes)
    why = (
        f"a step takes {step * 1e6:,.0f} µs: {num_envs} envs over {processes} processes "
        f"would save {saved * 1e6:,.0f} µs a batch against {MARGIN} x a "
        f"{ROUND_TRIP * 1e6:.0f} µs round trip"
    )
    return ("shared_memory" if saved > MARGIN * ROUND_TRIP else "sync"), why


def get_worker_pool(
    workers: Sequence[BaseEnvWorker] | EnvFn,
    force_sync: bool = False,
    *,
    num_envs: int | None = None,
    mode: str = "auto",
    envs_per_process: int | None = None,
    seed: int | None = 0,
    **kwargs: Any,
) -> WorkerPool:
    """Return a pool: from env workers (ml-starter's call) or from an env factory.

    Given workers, an :class:`AsyncWorkerPool` when all are async (unless
    ``force_sync``), else a :class:`SyncWorkerPool`. Given a factory and
    ``num_envs``, a pool of that ``mode``: ``"sync"`` (envs stepped in this
    process), ``"thread"`` or ``"process"`` (one each), ``"shared_memory"``
    (:class:`SharedMemoryPool`, ``envs_per_process`` each), or ``"auto"``:
    time the first steps of one env and step in this process when that is
    cheaper than a round trip to other processes, else use shared memory. The
    pool's ``mode`` and ``mode_reason`` attributes say what was chosen and why.
    Other keywords (``step_timeout``, ``build_timeout``, ``max_restarts``) go
    to the pool.

    Examples
    --------
    >>> import functools
    >>> from kit.rl.pool import AsyncWorkerPool, SyncWorkerPool
    >>> from kit.rl import gym_env
    >>> from kit.rl.workers import make_workers
    >>> workers = make_workers(functools.partial(gym_env, "CartPole-v1"), 2, mode="thread")
    >>> isinstance(get_worker_pool(workers), AsyncWorkerPool)
    True
    >>> isinstance(get_worker_pool(workers, True), SyncWorkerPool)
    True
    >>> for w in workers: w.cleanup()
    >>> pool = get_worker_pool(functools.partial(gym_env, "CartPole-v1"), num_envs=8)
    >>> pool.mode, isinstance(pool, SyncWorkerPool)
    ('sync', True)
    >>> pool.close()
    """
    if not callable(workers):
        if num_envs is not None or envs_per_process is not None:
            raise TypeError(
                "num_envs and envs_per_process go with an env factory, not with built workers"
            )
        if not force_sync and all(isinstance(w, AsyncEnvWorker) for w in workers):
            return AsyncWorkerPool(workers, **kwargs)
        return SyncWorkerPool(workers, **kwargs)
    env_fn = workers
    if num_envs is None:
        raise TypeError("get_worker_pool(env_fn, ...) needs num_envs=")
    if mode not in POOL_MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, POOL_MODES))}, got {mode!r}")
    if force_sync:
        mode = "sync"
    reason = "asked for"
    first: list[SyncEnvWorker] = []
    if mode == "auto":
        # The probe env becomes env 0 if the pool steps in this process: built once.
        probe = SyncEnvWorker(env_fn)
        env = probe._env
        mode, reason = choose_mode(None if env is None else step_seconds(env, seed), num_envs)
        if mode == "sync":
            first = [probe]
        else:
            probe.cleanup()
    pool: WorkerPool
    if mode == "shared_memory":
        pool = SharedMemoryPool(
            env_fn, num_envs, envs_per_process=envs_per_process, seed=seed, **kwargs
        )
    elif mode == "sync":
        seeds = _seeds(seed, num_envs)
        if first:
            first[0].seed = seeds[0]
        built = first + [SyncEnvWorker(env_fn, s) for s in seeds[len(first) :]]
        pool = SyncWorkerPool(built, **kwargs)
    else:
        pool = AsyncWorkerPool(make_workers(env_fn, num_envs, mode=mode, seed=seed), **kwargs)
    pool.mode, pool.mode_reason = mode, reason
    return pool
