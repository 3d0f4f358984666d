"""Reinforcement-learning workers on Kit: env pools, collectors, evaluators, buffers, learner.

Gymnasium's env API (``reset(seed=...) -> (obs, info)``, ``step(a) -> (obs,
reward, terminated, truncated, info)``); env workers and pools after
ml-starter; collectors, evaluators, replay buffers, learner hooks and the
commander after DI-engine's ``ding.worker``; distributed collection on Dask
with envs built once per worker by an :class:`kit.EnvironmentProvider`.
Plain classes and callbacks: nothing needs a registry.

``kit.rl`` exports the entry points a training loop is written against:
:func:`build_pool`, the collectors and the evaluator, the replay buffer, the
learner and its hooks. The rest is in its submodule: the pools and their env
states in :mod:`kit.rl.pool` (and :mod:`kit.rl.shared`, :mod:`kit.rl.choose`),
env workers in :mod:`kit.rl.workers`, seeds and the env loop in
:mod:`kit.rl.collect`, the prioritized buffer in :mod:`kit.rl.buffer`, the
metric evaluator in :mod:`kit.rl.evaluate`, self-play (its collector too) in
:mod:`kit.rl.battle`, schedules in :mod:`kit.rl.commander`; errors in
:mod:`kit.errors`.
"""

# ruff: noqa: E402  (the extra is checked before the wing's imports need it)
from kit._base.extras import require as _require

_require("kit.rl", "rl", "numpy")

from kit._base.deprecated import moved as _moved
from kit._base.errors import speak_as as _speak_as
from kit.rl._types import Episode, Transition
from kit.rl.buffer import ReplayBuffer
from kit.rl.collect import EpisodeCollector, Policy, SampleCollector
from kit.rl.distributed import DistributedCollector, EnvPoolProvider, build_pool, gym_env
from kit.rl.evaluate import Evaluator
from kit.rl.learner import CheckpointHook, Learner, LogReduceHook
from kit.rl.monitor import TrainingLog

__all__ = [
    "CheckpointHook",
    "DistributedCollector",
    "EnvPoolProvider",
    "Episode",
    "EpisodeCollector",
    "Evaluator",
    "Learner",
    "LogReduceHook",
    "Policy",
    "ReplayBuffer",
    "SampleCollector",
    "TrainingLog",
    "Transition",
    "build_pool",
    "gym_env",
]

# Names kit.rl exported before its surface was cut: where each lives now.
_MOVED = {
    "AlreadyPendingError": "kit.errors",
    "AsyncEnvWorker": "kit.rl.workers",
    "AsyncWorkerPool": "kit.rl.pool",
    "BattleCollector": "kit.rl.battle",
    "MetricEvaluator": "kit.rl.evaluate",
    "PrioritizedReplayBuffer": "kit.rl.buffer",
    "BaseEnvWorker": "kit.rl.workers",
    "BattleEvaluator": "kit.rl.battle",
    "BattleResult": "kit.rl.battle",
    "ClosedPoolError": "kit.errors",
    "Commander": "kit.rl.commander",
    "EVAL": "kit.rl.collect",
    "EnvLoop": "kit.rl.collect",
    "EnvPoolError": "kit.errors",
    "EnvSlot": "kit.rl.workers",
    "EnvState": "kit.rl.pool",
    "EnvStatus": "kit.rl.pool",
    "EpisodeStatus": "kit.rl.collect",
    "EvalResult": "kit.rl.evaluate",
    "FrozenPolicy": "kit.rl.battle",
    "IMetric": "kit.rl.evaluate",
    "JointEnv": "kit.rl.battle",
    "Lineup": "kit.rl.battle",
    "NothingPendingError": "kit.errors",
    "RockPaperScissors": "kit.rl.battle",
    "SampledBatch": "kit.rl.buffer",
    "SharedMemoryPool": "kit.rl.shared",
    "SyncEnvWorker": "kit.rl.workers",
    "SyncWorkerPool": "kit.rl.pool",
    "TRAIN": "kit.rl.collect",
    "WorkerPool": "kit.rl.pool",
    "episode_seed": "kit.rl.collect",
    "get_worker_pool": "kit.rl.choose",
    "joint_env": "kit.rl.battle",
    "linear_schedule": "kit.rl.commander",
    "make_workers": "kit.rl.workers",
}

__getattr__ = _moved(__name__, _MOVED)

_speak_as(__name__, globals(), __all__)
