"""Small gymnasium-style envs for the RL tests: deterministic, and some that fail on purpose."""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import time
from typing import Any

import numpy as np

from kit.rl import EnvPoolProvider


class CountEnv:
    """Reward 1 a step; the episode lasts 2 + seed % length_mod steps (longer is better).

    Observations are ``[step, seed % 1000]``; truncated instead of terminated
    when ``truncate`` is set.
    """

    def __init__(self, length_mod: int = 9, truncate: bool = False, step_seconds: float = 0.0):
        self.length_mod = length_mod
        self.truncate = truncate
        self.step_seconds = step_seconds
        self.seed = 0
        self.t = 0
        self.length = 2

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self.seed = 0 if seed is None else seed
        self.t = 0
        self.length = 2 + self.seed % self.length_mod
        return np.array([0.0, self.seed % 1000], dtype=np.float64), {"length": self.length}

    def step(self, action: Any):
        if self.step_seconds:
            time.sleep(self.step_seconds)
        self.t += 1
        end = self.t >= self.length
        obs = np.array([float(self.t), self.seed % 1000], dtype=np.float64)
        return obs, 1.0, end and not self.truncate, end and self.truncate, {"t": self.t}

    def close(self) -> None:
        pass


class EchoEnv:
    """An env whose actions are text: the observation is the last action said."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return "", {}

    def step(self, action: str):
        return action, float(len(action)), action == "close", False, {}


class SlowBuildEnv(CountEnv):
    """A CountEnv that takes ``build_seconds`` to build (a simulator loading its assets)."""

    def __init__(self, build_seconds: float, **kwargs: Any):
        time.sleep(build_seconds)
        super().__init__(**kwargs)


class FaultyEnv(CountEnv):
    """A CountEnv that fails at step 2 of episodes whose seed is in ``bad_seeds``.

    ``fault``: "raise", "exit" (os._exit), "kill" (SIGKILL itself), "segfault", "hang",
    "reward" (a reward that is text).
    With ``bad_every``, also the episodes whose seed is a multiple of it.
    """

    def __init__(self, fault: str, bad_seeds: frozenset[int], bad_every: int = 0, **kwargs: Any):
        super().__init__(**kwargs)
        self.fault = fault
        self.bad_seeds = bad_seeds
        self.bad_every = bad_every

    def step(self, action: Any):
        doomed = self.seed in self.bad_seeds or (
            self.bad_every > 0 and self.seed % self.bad_every == 0
        )
        if self.t == 1 and doomed:
            if self.fault == "raise":
                raise RuntimeError(f"env blew up on seed {self.seed}")
            if self.fault == "exit":
                os._exit(3)
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault == "segfault":
                ctypes.string_at(0)
            if self.fault == "hang":
                time.sleep(3600)
            if self.fault == "reward":  # a reward that is no number
                obs, _, terminated, truncated, info = super().step(action)
                return obs, "one", terminated, truncated, info
        return super().step(action)


def first_action(observations: list[Any], rngs: list[np.random.Generator]) -> list[int]:
    """A policy: always 0."""
    return [0 for _ in observations]


def random_action(observations: list[Any], rngs: list[np.random.Generator]) -> list[int]:
    """A policy: 0 or 1 from each episode's own generator."""
    return [int(rng.integers(2)) for rng in rngs]


class CountProvider(EnvPoolProvider):
    """An EnvPoolProvider of CountEnvs (config ``count`` holds their keyword arguments)."""

    def env_fn(self) -> Any:
        return functools.partial(CountEnv, **dict(self.config.get("count") or {}))


def action_from_weights(weights: Any) -> Any:
    """make_policy for the distributed collector: always play ``weights["action"]``."""
    return functools.partial(_constant, weights["action"])


def random_policy(weights: Any) -> Any:
    """make_policy: random actions from each episode's generator (weights unused)."""
    return random_action


def _constant(action: int, observations: list[Any], rngs: list[Any]) -> list[int]:
    return [action for _ in observations]


def trajectory(episode: Any) -> list[tuple[Any, ...]]:
    """An episode's content, comparable with ==."""
    return [
        (tuple(t.obs), t.action, t.reward, tuple(t.next_obs), t.terminated, t.truncated)
        for t in episode.transitions
    ]


class BusyEnv(CountEnv):
    """A CountEnv with gymnasium spaces whose step burns ``step_seconds`` of CPU (a simulator)."""

    def __init__(self, step_seconds: float = 0.001, **kwargs: Any):
        import gymnasium

        super().__init__(**kwargs)
        self.busy = step_seconds
        self.action_space = gymnasium.spaces.Discrete(2)
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float64)

    def step(self, action: Any):
        end = time.thread_time() + self.busy
        while time.thread_time() < end:
            pass
        return super().step(action)


class UnpicklableInfoEnv(CountEnv):
    """A CountEnv whose step info holds a lock (which cannot be pickled) on seed 13."""

    def step(self, action: Any):
        import threading

        obs, reward, terminated, truncated, info = super().step(action)
        if self.seed == 13:
            info["lock"] = threading.Lock()
        return obs, reward, terminated, truncated, info
