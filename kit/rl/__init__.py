"""Reinforcement-learning workers on Kit: env pools, collectors, evaluators, buffers, learner.

Gymnasium's env API (``reset(seed=...) -> (obs, info)``, ``step(a) -> (obs,
reward, terminated, truncated, info)``); env workers and pools after
ml-starter; collectors, evaluators, replay buffers, learner hooks and the
commander after DI-engine's ``ding.worker``; distributed collection on Dask
with envs built once per worker by an :class:`kit.EnvironmentProvider`.
Plain classes and callbacks: nothing needs a registry.
"""

from kit._errors import speak_as as _speak_as
from kit.rl._errors import AlreadyPendingError, ClosedPoolError, EnvPoolError, NothingPendingError
from kit.rl._seeding import EVAL, TRAIN, episode_seed
from kit.rl._types import EnvState, EnvStatus, Episode, EpisodeStatus, Transition
from kit.rl.battle import (
    BattleCollector,
    BattleEvaluator,
    BattleResult,
    FrozenPolicy,
    JointEnv,
    Lineup,
    RockPaperScissors,
    joint_env,
)
from kit.rl.buffer import PrioritizedReplayBuffer, ReplayBuffer, SampledBatch
from kit.rl.choose import get_worker_pool
from kit.rl.collect import EnvLoop, EpisodeCollector, Policy, SampleCollector
from kit.rl.commander import Commander, linear_schedule
from kit.rl.distributed import DistributedCollector, EnvPoolProvider, build_pool, gym_env
from kit.rl.evaluate import EvalResult, Evaluator, IMetric, MetricEvaluator
from kit.rl.learner import CheckpointHook, Learner, LogReduceHook
from kit.rl.monitor import TrainingLog
from kit.rl.pool import AsyncWorkerPool, SyncWorkerPool, WorkerPool
from kit.rl.shared import SharedMemoryPool
from kit.rl.workers import AsyncEnvWorker, BaseEnvWorker, EnvSlot, SyncEnvWorker, make_workers

__all__ = [
    "EVAL",
    "TRAIN",
    "AlreadyPendingError",
    "AsyncEnvWorker",
    "AsyncWorkerPool",
    "BaseEnvWorker",
    "BattleCollector",
    "BattleEvaluator",
    "BattleResult",
    "CheckpointHook",
    "ClosedPoolError",
    "Commander",
    "DistributedCollector",
    "EnvLoop",
    "EnvPoolError",
    "EnvPoolProvider",
    "EnvSlot",
    "EnvState",
    "EnvStatus",
    "Episode",
    "EpisodeCollector",
    "EpisodeStatus",
    "EvalResult",
    "Evaluator",
    "FrozenPolicy",
    "IMetric",
    "JointEnv",
    "Learner",
    "Lineup",
    "LogReduceHook",
    "MetricEvaluator",
    "NothingPendingError",
    "Policy",
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "RockPaperScissors",
    "SampleCollector",
    "SampledBatch",
    "SharedMemoryPool",
    "SyncEnvWorker",
    "SyncWorkerPool",
    "TrainingLog",
    "Transition",
    "WorkerPool",
    "build_pool",
    "episode_seed",
    "get_worker_pool",
    "gym_env",
    "joint_env",
    "linear_schedule",
    "make_workers",
]

_speak_as(__name__, globals(), __all__)
