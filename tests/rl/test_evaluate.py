"""Evaluators: the first n episodes started, whatever the number of envs; weighted metrics."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from kit.rl import Evaluator
from kit.rl.choose import get_worker_pool
from kit.rl.evaluate import IMetric, MetricEvaluator
from kit.rl.workers import make_workers
from tests.rl.envs import CountEnv, first_action


def evaluate(num_envs: int, n_episode: int = 12) -> Any:
    # Returns equal lengths here: an evaluator that favoured short episodes would show it.
    env_fn = functools.partial(CountEnv, length_mod=20)
    with get_worker_pool(make_workers(env_fn, num_envs)) as pool:
        return Evaluator(pool, n_episode=n_episode, seed=3).eval(first_action)


def test_the_same_mean_for_1_4_and_16_envs() -> None:
    results = [evaluate(n) for n in (1, 4, 16)]
    assert len({r.mean for r in results}) == 1
    assert all(len(r.returns) == 12 for r in results)
    assert results[0].returns == results[2].returns
    assert results[0].lengths == [int(r) for r in results[0].returns]


def test_four_envs_give_the_mean_of_the_first_twelve_episodes_run_one_by_one() -> None:
    # Short episodes finish first; an evaluator that kept whichever 12 ended first (or each
    # env's last few) would lean towards them. The first 12 started are the same set.
    result = evaluate(4)
    every = evaluate(1, n_episode=12)
    assert result.mean == every.mean
    assert min(result.lengths) < result.mean < max(result.lengths)


def test_statistics_best_callback_and_stop() -> None:
    seen: list[float] = []
    env_fn = functools.partial(CountEnv, length_mod=20)
    with get_worker_pool(make_workers(env_fn, 2)) as pool:
        evaluator = Evaluator(
            pool, n_episode=5, stop_value=5.0, on_best=lambda r: seen.append(r.mean)
        )
        first = evaluator.eval(first_action, train_iter=0, envstep=10)
        again = evaluator.eval(first_action, train_iter=1)
    assert first.best and not again.best  # equal, not better
    assert seen == [first.mean]
    assert first.stop == (first.mean >= 5.0)
    summary = first.summary()
    assert summary["eval_return_mean"] == first.mean
    assert summary["eval_return_min"] <= summary["eval_return_mean"] <= summary["eval_return_max"]
    assert first.statuses == ["terminated"] * 5 and (first.train_iter, first.envstep) == (0, 10)


def test_should_eval_by_frequency() -> None:
    evaluator = Evaluator(None, eval_freq=10)
    assert [i for i in range(35) if evaluator.should_eval(i)] == [0, 10, 20, 30]


def test_an_evaluator_without_a_pool_judges_episodes_run_elsewhere() -> None:
    evaluator = Evaluator(None, n_episode=3)
    with pytest.raises(RuntimeError, match="pass them to judge"):
        evaluator.eval(first_action)


class MeanError(IMetric):
    def eval(self, inputs: Any, labels: Any) -> dict[str, float]:
        errors = [abs(o - y) for o, y in zip(inputs, labels, strict=True)]
        return {"mae": sum(errors) / len(errors)}

    def gt(self, a: dict[str, float], b: dict[str, float] | None) -> bool:
        return b is None or a["mae"] <= b["mae"]


def test_a_ragged_last_batch_gives_the_same_result_as_all_data_at_once() -> None:
    xs = [float(i) for i in range(10)]
    ys = [x + (i % 3) for i, x in enumerate(xs)]
    batches = [(xs[i : i + 4], ys[i : i + 4]) for i in range(0, 10, 4)]  # 4, 4, 2
    at_once = MetricEvaluator([(xs, ys)], MeanError()).eval(lambda b: b)
    batched = MetricEvaluator(batches, MeanError()).eval(lambda b: b)
    assert batched == pytest.approx(at_once)


def test_metric_best_follows_gt() -> None:
    best: list[dict[str, float]] = []
    evaluator = MetricEvaluator([([1.0], [1.0])], MeanError(), on_best=best.append)
    evaluator.eval(lambda b: [x + 2 for x in b])
    evaluator.eval(lambda b: [x + 5 for x in b])  # worse: not best
    evaluator.eval(lambda b: b)
    assert [b["mae"] for b in best] == [2.0, 0.0]
    with pytest.raises(ValueError, match="no data"):
        MetricEvaluator([], MeanError()).eval(lambda b: b)


def test_eval_failed_counts_every_status_but_a_normal_end_plain_strings_too() -> None:
    from kit.rl.collect import EpisodeStatus
    from kit.rl.evaluate import EvalResult

    statuses = [EpisodeStatus.TERMINATED, "truncated", EpisodeStatus.TIMEOUT, "lost"]
    result = EvalResult(0, 100, [1.0, 2.0], [1, 2], statuses)
    assert result.summary()["eval_failed"] == 2.0
