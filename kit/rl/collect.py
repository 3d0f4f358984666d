"""Collectors: run a policy in a pool of envs and return transitions or whole episodes.

A *policy* is a callable ``policy(observations, rngs, **policy_kwargs)``
that returns one action per observation. ``rngs[i]`` is the random
generator of the episode ``observations[i]`` belongs to: sample actions from
it (never from a global RNG) and compute each row on its own, and an episode
comes out the same whatever the number of envs, workers or processes,
because its env seed and its generator depend only on its episode id (see
:func:`kit.rl.collect.episode_seed`). The policy's ``version`` attribute (or the
``policy_version`` argument) is recorded on every transition.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kit.rl._seeding import EVAL, TRAIN, episode_seed
from kit.rl._types import RESET, EnvState, Episode, EpisodeStatus, Transition
from kit.rl.pool import WorkerPool

__all__ = [
    "EVAL",
    "TRAIN",
    "EnvLoop",
    "EpisodeCollector",
    "EpisodeStatus",
    "Policy",
    "SampleCollector",
    "episode_seed",
]

Policy = Callable[..., Sequence[Any]]


@dataclass
class _Slot:
    episode: Episode
    rng: np.random.Generator
    obs: Any = None
    action: Any = None
    version: int = 0
    # Two-player loops: the env steps taken, and each agent's (policy name, version).
    steps: int = 0
    acted: dict[str, tuple[str, int]] = field(default_factory=dict)


def _version(policy: Policy, policy_version: int | None) -> int:
    if policy_version is not None:
        return int(policy_version)
    return int(getattr(policy, "version", 0))


class EnvLoop:
    """Drive a pool: start episodes on free slots, batch policy calls, record transitions.

    The engine under every collector and evaluator, on the driver and on
    Dask workers alike.

    Examples
    --------
    >>> import gymnasium as gym
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2))
    >>> episodes = EnvLoop(pool, seed=0).run_episodes([7, 3], lambda obs, rngs: [0] * len(obs))
    >>> [e.episode_id for e in episodes]
    [3, 7]
    >>> pool.cleanup()
    """

    def __init__(
        self, pool: WorkerPool, seed: int = 0, stream: int = TRAIN, worker: str = "driver"
    ) -> None:
        self.pool = pool
        self.seed = seed
        self.stream = stream
        self.worker = worker
        self.active: dict[int, _Slot] = {}
        self.envstep = 0

    @property
    def free_slots(self) -> list[int]:
        """Slots with no episode running."""
        return [s for s in range(self.pool.num_envs) if s not in self.active]

    def start(self, slot: int, episode_id: int) -> None:
        """Begin episode ``episode_id`` on ``slot`` (reset with the episode's seed)."""
        env_seed, rng = episode_seed(self.seed, self.stream, episode_id)
        self.active[slot] = _Slot(Episode(episode_id, env_seed, slot, self.worker), rng)
        self.pool.send_reset(slot, seed=env_seed)

    def step(
        self, policy: Policy, policy_kwargs: Mapping[str, Any], version: int
    ) -> tuple[list[Transition], list[Episode]]:
        """Take the answers ready now, act where needed; return new transitions, ended episodes."""
        states, slots = self.pool.recv()
        new: list[Transition] = []
        ended: list[Episode] = []
        acting: list[int] = []
        for state, slot in zip(states, slots, strict=True):
            current = self.active[slot]
            episode = current.episode
            if state.fault:
                episode.status, episode.error = EpisodeStatus.ended_by(state.status), state.error
                ended.append(episode)
                del self.active[slot]
                continue
            if state.status == RESET:
                current.obs = state.obs
                acting.append(slot)
                continue
            made = self._transitions(current, state, slot)
            episode.transitions += made
            new += made
            self.envstep += 1
            if state.terminated or state.truncated:
                episode.status = (
                    EpisodeStatus.TERMINATED if state.terminated else EpisodeStatus.TRUNCATED
                )
                ended.append(episode)
                del self.active[slot]
            else:
                current.obs = state.obs
                acting.append(slot)
        if acting:
            self._act(acting, policy, policy_kwargs, version)
        return new, ended

    def _transitions(self, current: _Slot, state: EnvState, slot: int) -> list[Transition]:
        """Return the transitions of one env step (one; a two-player loop makes one per agent)."""
        episode = current.episode
        return [
            Transition(
                current.obs,
                current.action,
                state.reward,
                state.obs,
                state.terminated,
                state.truncated,
                episode.episode_id,
                len(episode.transitions),
                slot,
                self.worker,
                current.version,
                episode.seed,
                state.info or {},
            )
        ]

    def _act(
        self, slots: list[int], policy: Policy, policy_kwargs: Mapping[str, Any], version: int
    ) -> None:
        chosen = [self.active[s] for s in slots]
        actions = list(policy([c.obs for c in chosen], [c.rng for c in chosen], **policy_kwargs))
        if len(actions) != len(slots):
            raise ValueError(
                f"the policy returned {len(actions)} actions for {len(slots)} observations; "
                "it must return one action per observation"
            )
        for current, action in zip(chosen, actions, strict=True):
            current.action, current.version = action, version
        self.pool.send(actions, slots)

    def abandon(self) -> None:
        """Drop the episodes running here; wait out the commands in flight so the pool is free."""
        self.pool.drain()
        self.active.clear()

    def run_episodes(
        self,
        episode_ids: Iterable[int],
        policy: Policy,
        policy_kwargs: Mapping[str, Any] | None = None,
        policy_version: int | None = None,
    ) -> list[Episode]:
        """Run exactly these episodes to their end; return them in id order."""
        if self.active:
            raise RuntimeError(
                f"episodes {sorted(s.episode.episode_id for s in self.active.values())} are "
                "still running in this loop (an earlier collect was interrupted): call "
                "reset_env() on the collector or evaluator first"
            )
        waiting = deque(episode_ids)
        total = len(waiting)
        kwargs = dict(policy_kwargs or {})
        version = _version(policy, policy_version)
        for slot in self.free_slots:
            if waiting:
                self.start(slot, waiting.popleft())
        done: dict[int, Episode] = {}
        while len(done) < total:
            _, ended = self.step(policy, kwargs, version)
            for episode in ended:
                done[episode.episode_id] = episode
                if waiting:
                    self.start(episode.env_index, waiting.popleft())
        return [done[i] for i in sorted(done)]


class EnvUser:
    """What collectors and evaluators share: a loop over a pool, and a policy.

    DI-engine's lifecycle: :meth:`reset_env` (drop the running episodes,
    optionally switch to another pool), :meth:`reset_policy` (optionally
    another policy; its ``reset()`` is called when it has one) and
    :meth:`close`. The pool belongs to the caller: ``close`` leaves it open
    and free (nothing in flight), for another collector or evaluator.
    """

    loop: EnvLoop | None
    #: The policy (for two-player users, a lineup of policies).
    policy: Any
    #: The loop driving the pool (two-player users drive a loop of their own).
    loop_class: type[EnvLoop] = EnvLoop

    def _init_env_user(
        self, pool: WorkerPool | None, seed: int, stream: int, worker: str, policy: Any
    ) -> None:
        self._loop_args = (seed, stream, worker)
        self.loop = None if pool is None else self.loop_class(pool, seed, stream, worker)
        self.policy = policy

    def reset_env(self, pool: WorkerPool | None = None) -> None:
        """Drop the running episodes (the pool is left free); with ``pool``, use it from now on."""
        if self.loop is not None:
            self.loop.abandon()
        if pool is not None:
            envstep = 0 if self.loop is None else self.loop.envstep
            self.loop = self.loop_class(pool, *self._loop_args)
            self.loop.envstep = envstep
        self._forget_episodes()

    def _forget_episodes(self) -> None:
        """Drop what the collector kept of the episodes it was running."""

    def reset_policy(self, policy: Policy | None = None) -> None:
        """Use ``policy`` from now on (if given); call its ``reset()`` when it has one."""
        if policy is not None:
            self.policy = policy
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            reset()

    def close(self) -> None:
        """Stop using the pool: running episodes are dropped, nothing is left in flight."""
        if self.loop is not None:
            self.loop.abandon()
        self._forget_episodes()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _policy(self, policy: Any) -> Any:
        chosen = policy if policy is not None else self.policy
        if chosen is None:
            raise TypeError(
                "no policy: pass one to this call, to the constructor (policy=...) or to "
                "reset_policy()"
            )
        return chosen

    def _loop(self) -> EnvLoop:
        if self.loop is None:
            raise RuntimeError("no pool: pass one to the constructor or to reset_env(pool)")
        return self.loop


class _Collector(EnvUser):
    """What both collectors share: a loop over a pool, episode ids counting up."""

    def __init__(
        self,
        pool: WorkerPool,
        seed: int = 0,
        stream: int = TRAIN,
        worker: str = "driver",
        *,
        policy: Policy | None = None,
    ) -> None:
        self._init_env_user(pool, seed, stream, worker, policy)
        self.next_episode_id = 0
        self._forget_episodes()

    @property
    def envstep(self) -> int:
        """Env steps taken so far."""
        return self._loop().envstep


class EpisodeCollector(_Collector):
    """Collect whole episodes (DI-engine's episode collector), with ids counting up.

    Examples
    --------
    >>> import gymnasium as gym
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2))
    >>> def push_right(observations, rngs):
    ...     return [1 for _ in observations]
    >>> episodes = EpisodeCollector(pool, seed=0).collect(3, push_right)
    >>> [e.episode_id for e in episodes], [str(e.status) for e in episodes]
    ([0, 1, 2], ['terminated', 'terminated', 'terminated'])
    >>> pool.cleanup()
    """

    def collect(
        self,
        n_episode: int,
        policy: Policy | None = None,
        policy_kwargs: Mapping[str, Any] | None = None,
        policy_version: int | None = None,
    ) -> list[Episode]:
        """Run the next ``n_episode`` episode ids to the end; return them in id order.

        An episode broken by an env fault comes back with status
        ``"env_error"`` or ``"timeout"`` and the transitions it had.
        """
        if n_episode < 1:
            raise ValueError(f"n_episode must be at least 1, got {n_episode}")
        chosen = self._policy(policy)
        ids = range(self.next_episode_id, self.next_episode_id + n_episode)
        self.next_episode_id += n_episode
        return self._loop().run_episodes(ids, chosen, policy_kwargs, policy_version)


class SampleCollector(_Collector):
    """Collect transitions (DI-engine's sample collector); episodes run across calls.

    ``collect(n_sample)`` returns ``n_sample`` transitions. With
    ``drop_extra=True`` (the default) the surplus of the last round of steps
    is not thrown away, as DI-engine does, but returned first by the next
    call, so no env step is lost. Episodes that ended during a call are in
    :attr:`last_episodes`.

    Examples
    --------
    >>> import gymnasium as gym
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 3))
    >>> collector = SampleCollector(pool, seed=0)
    >>> samples = collector.collect(100, lambda obs, rngs: [int(r.integers(2)) for r in rngs])
    >>> len(samples), collector.envstep >= 100
    (100, True)
    >>> pool.cleanup()
    """

    #: Episodes that ended during the latest :meth:`collect`.
    last_episodes: list[Episode]

    def _forget_episodes(self) -> None:
        self.last_episodes = []
        self._carry: list[Transition] = []

    def _start(self, slot: int) -> None:
        self._loop().start(slot, self.next_episode_id)
        self.next_episode_id += 1

    def collect(
        self,
        n_sample: int,
        policy: Policy | None = None,
        policy_kwargs: Mapping[str, Any] | None = None,
        drop_extra: bool = True,
        policy_version: int | None = None,
    ) -> list[Transition]:
        """Return ``n_sample`` transitions (at least that many with ``drop_extra=False``)."""
        if n_sample < 1:
            raise ValueError(f"n_sample must be at least 1, got {n_sample}")
        chosen = self._policy(policy)
        loop = self._loop()
        kwargs = dict(policy_kwargs or {})
        version = _version(chosen, policy_version)
        out, self._carry = self._carry, []
        self.last_episodes = []
        for slot in loop.free_slots:
            self._start(slot)
        while len(out) < n_sample:
            new, ended = loop.step(chosen, kwargs, version)
            out.extend(new)
            for episode in ended:
                self.last_episodes.append(episode)
                self._start(episode.env_index)
        if drop_extra:
            out, self._carry = out[:n_sample], out[n_sample:]
        return out
