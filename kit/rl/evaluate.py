"""Evaluators: a policy's return over fixed episodes, or a metric over a dataset.

:class:`Evaluator` runs exactly ``n_episode`` episodes, the first n started
(ids 0 to n-1 of the evaluation seed stream, the same every time), so short
episodes are not favoured however many envs run them. DI-engine's
VectorEvalMonitor keeps the last episodes of each env instead, which leans
towards short episodes when returns grow with length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit.rl._seeding import EVAL
from kit.rl._types import NORMAL_ENDS, Episode
from kit.rl.collect import EnvUser, Policy
from kit.rl.pool import WorkerPool

__all__ = ["EvalResult", "Evaluator", "IMetric", "MetricEvaluator"]


@dataclass
class EvalResult:
    """What an evaluation found.

    Return statistics are over the episodes that ended normally; ``statuses``
    lists every episode's status (a broken one says ``"env_error"`` or
    ``"timeout"``).

    Examples
    --------
    >>> r = EvalResult(0, 100, [10.0, 20.0], [10, 20], ["terminated", "truncated", "timeout"])
    >>> r.mean, r.std, r.min, r.max, r.summary()["eval_failed"]
    (15.0, 5.0, 10.0, 20.0, 1.0)
    """

    train_iter: int
    envstep: int
    returns: list[float]
    lengths: list[int]
    statuses: list[str]
    episodes: list[Episode] = field(repr=False, default_factory=list)
    best: bool = False
    stop: bool = False

    @property
    def mean(self) -> float:
        """Mean return (NaN when no episode ended normally)."""
        return sum(self.returns) / len(self.returns) if self.returns else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation of the returns."""
        if not self.returns:
            return math.nan
        mean = self.mean
        return math.sqrt(sum((r - mean) ** 2 for r in self.returns) / len(self.returns))

    @property
    def min(self) -> float:
        """Lowest return."""
        return min(self.returns) if self.returns else math.nan

    @property
    def max(self) -> float:
        """Highest return."""
        return max(self.returns) if self.returns else math.nan

    def summary(self) -> dict[str, float]:
        """Return the figures as a flat dict, for logs and dashboards."""
        return {
            "eval_return_mean": self.mean,
            "eval_return_std": self.std,
            "eval_return_min": self.min,
            "eval_return_max": self.max,
            "eval_length_mean": sum(self.lengths) / len(self.lengths) if self.lengths else 0.0,
            "eval_failed": float(sum(s not in NORMAL_ENDS for s in self.statuses)),
        }


class _Schedule:
    def __init__(self, eval_freq: int) -> None:
        self.eval_freq = eval_freq
        self.last_iter: int | None = None

    def should_eval(self, train_iter: int) -> bool:
        if self.last_iter is not None and train_iter - self.last_iter < self.eval_freq:
            return False
        self.last_iter = train_iter
        return True


class Evaluator(EnvUser):
    """Evaluate a policy on the first ``n_episode`` episodes of the evaluation stream.

    Parameters
    ----------
    pool
        Envs to run (any number: the result does not depend on it); None
        when the episodes are collected elsewhere (on Dask, say) and given
        to :meth:`judge`.
    n_episode
        Episodes per evaluation.
    seed
        Seeds the evaluation stream (disjoint from training's).
    eval_freq
        :meth:`should_eval` is true every ``eval_freq`` training iterations.
    stop_value
        ``result.stop`` is true once the mean return reaches it.
    on_best
        Called with the result when the mean return beats every earlier one
        (e.g. save a checkpoint).

    Examples
    --------
    >>> import gymnasium as gym
    >>> from kit.rl.workers import SyncEnvWorker
    >>> from kit.rl.pool import SyncWorkerPool
    >>> pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym.make("CartPole-v1"), 2))
    >>> evaluator = Evaluator(pool, n_episode=4, stop_value=195)
    >>> result = evaluator.eval(lambda obs, rngs: [0 for _ in obs])
    >>> len(result.returns), result.stop, result.best
    (4, False, True)
    >>> pool.cleanup()
    """

    def __init__(
        self,
        pool: WorkerPool | None,
        n_episode: int = 8,
        *,
        seed: int = 0,
        eval_freq: int = 100,
        stop_value: float | None = None,
        on_best: Callable[[EvalResult], None] | None = None,
        worker: str = "driver",
        policy: Policy | None = None,
    ) -> None:
        self._init_env_user(pool, seed, EVAL, worker, policy)
        self.n_episode = n_episode
        self.stop_value = stop_value
        self.on_best = on_best
        self.best_mean: float | None = None
        self._schedule = _Schedule(eval_freq)

    def should_eval(self, train_iter: int) -> bool:
        """Return True at the first call and then every ``eval_freq`` iterations."""
        return self._schedule.should_eval(train_iter)

    def eval(
        self,
        policy: Policy | None = None,
        n_episode: int | None = None,
        *,
        train_iter: int = -1,
        envstep: int = -1,
        policy_kwargs: Mapping[str, Any] | None = None,
        policy_version: int | None = None,
    ) -> EvalResult:
        """Run the episodes and return the result (with ``best`` and ``stop`` set)."""
        if self.loop is None:
            raise RuntimeError(
                "this Evaluator has no pool: collect the episodes elsewhere (e.g. a "
                "DistributedCollector with stream=EVAL) and pass them to judge()"
            )
        n = self.n_episode if n_episode is None else n_episode
        if n < 1:
            raise ValueError(f"n_episode must be at least 1, got {n}")
        chosen = self._policy(policy)
        episodes = self.loop.run_episodes(range(n), chosen, policy_kwargs, policy_version)
        return self.judge(episodes, train_iter, envstep)

    def judge(
        self, episodes: Sequence[Episode], train_iter: int = -1, envstep: int = -1
    ) -> EvalResult:
        """Score episodes run elsewhere; update the best mean and call ``on_best``."""
        episodes = list(episodes)
        good = [e for e in episodes if e.ok]
        result = EvalResult(
            train_iter,
            envstep,
            [e.return_ for e in good],
            [e.length for e in good],
            [e.status for e in episodes],
            episodes,
        )
        if good and (self.best_mean is None or result.mean > self.best_mean):
            self.best_mean = result.mean
            result.best = True
            if self.on_best is not None:
                self.on_best(result)
        result.stop = bool(good) and self.stop_value is not None and result.mean >= self.stop_value
        return result


class IMetric:
    """A metric for :class:`MetricEvaluator` (DI-engine's IMetric).

    ``eval(inputs, labels)`` scores one batch, ``inputs`` being the model's
    outputs for it, as in DI-engine (means over the batch);
    ``reduce(results, weights)`` combines batch results weighted by their
    sizes, so a ragged last batch counts for what it holds; ``gt(a, b)``
    says whether ``a`` is at least as good as ``b`` (True when ``b`` is None).

    Examples
    --------
    >>> IMetric().reduce([{"acc": 1.0}, {"acc": 0.0}], weights=[3, 1])
    {'acc': 0.75}
    """

    def eval(self, inputs: Any, labels: Any) -> dict[str, float]:
        """Score one batch of model outputs against its labels."""
        raise NotImplementedError

    def reduce(
        self, results: Sequence[Mapping[str, float]], weights: Sequence[int]
    ) -> dict[str, float]:
        """Sample-weighted mean of each key over the batches."""
        total = sum(weights)
        if not results or total == 0:
            raise ValueError("nothing to reduce: the dataloader gave no data")
        return {
            key: sum(r[key] * w for r, w in zip(results, weights, strict=True)) / total
            for key in results[0]
        }

    def gt(self, a: Mapping[str, float], b: Mapping[str, float] | None) -> bool:
        """Return True when ``a`` is at least as good as ``b``."""
        raise NotImplementedError


class MetricEvaluator:
    """Evaluate a model on a dataset with a metric (DI-engine's MetricSerialEvaluator).

    ``dataloader`` yields ``(inputs, labels)`` batches; ``eval(model)`` calls
    ``model(inputs)`` on each and reduces the metric, weighted by batch size.

    Examples
    --------
    >>> class Accuracy(IMetric):
    ...     def eval(self, inputs, labels):
    ...         return {"acc": sum(o == l for o, l in zip(inputs, labels)) / len(labels)}
    ...     def gt(self, a, b):
    ...         return b is None or a["acc"] >= b["acc"]
    >>> data = [([1, 2, 3], [1, 0, 3]), ([4], [4])]   # a ragged last batch
    >>> evaluator = MetricEvaluator(data, Accuracy())
    >>> evaluator.eval(lambda xs: xs)
    {'acc': 0.75}
    """

    def __init__(
        self,
        dataloader: Iterable[tuple[Any, Any]],
        metric: IMetric,
        *,
        eval_freq: int = 100,
        on_best: Callable[[dict[str, float]], None] | None = None,
    ) -> None:
        self.dataloader = dataloader
        self.metric = metric
        self.on_best = on_best
        self.best: dict[str, float] | None = None
        self._schedule = _Schedule(eval_freq)

    def should_eval(self, train_iter: int) -> bool:
        """Return True at the first call and then every ``eval_freq`` iterations."""
        return self._schedule.should_eval(train_iter)

    def eval(self, model: Callable[[Any], Any]) -> dict[str, float]:
        """Return the reduced metric over the whole dataloader."""
        results: list[dict[str, float]] = []
        weights: list[int] = []
        for inputs, labels in self.dataloader:
            results.append(self.metric.eval(model(inputs), labels))
            weights.append(len(labels))
        value = self.metric.reduce(results, weights)
        if self.metric.gt(value, self.best):
            self.best = value
            if self.on_best is not None:
                self.on_best(value)
        return value
