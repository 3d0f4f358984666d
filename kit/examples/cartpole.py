"""CartPole with REINFORCE in numpy, collected by Kit's distributed collector.

Run ``python -m kit.examples.cartpole`` (``parallel.env=inline`` to stay in
one process). The policy is linear-softmax (4 observations to 2 actions);
episodes come from :class:`kit.rl.DistributedCollector` with the envs built
once per worker; the learner runs here; evaluation uses the first
``eval_episodes`` episodes of the evaluation stream, greedily.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

import kit
from kit.rl import DistributedCollector, EnvPoolProvider, Episode, Evaluator, Learner, TrainingLog
from kit.rl.collect import EVAL
from kit.rl.evaluate import EvalResult

CONFIG = Path(__file__).with_name("cartpole.yaml")


class LinearSoftmax:
    """A policy: softmax over ``obs @ weights``; samples with each episode's generator.

    Each row is computed on its own (no matrix product over the batch), so
    an episode's actions do not depend on which others share its batch.
    """

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = np.asarray(weights, dtype=np.float64)

    def probs(self, obs: np.ndarray) -> np.ndarray:
        """Return the action probabilities for one observation."""
        logits = (np.asarray(obs, dtype=np.float64)[:, None] * self.weights).sum(axis=0)
        logits -= logits.max()
        e = np.exp(logits)
        probs: np.ndarray = e / e.sum()
        return probs

    def __call__(
        self,
        observations: Sequence[Any],
        rngs: Sequence[np.random.Generator],
        greedy: bool = False,
    ) -> list[int]:
        """One action per observation."""
        actions = []
        for obs, rng in zip(observations, rngs, strict=True):
            p = self.probs(obs)
            actions.append(int(np.argmax(p)) if greedy else int(rng.random() < p[1]))
        return actions


def make_policy(weights: np.ndarray) -> LinearSoftmax:
    """Build the policy from broadcast weights (what the collector's workers call)."""
    return LinearSoftmax(weights)


class Model:
    """The learner's weights, with ``state_dict`` for checkpoints."""

    def __init__(self, seed: int = 0) -> None:
        self.weights = np.random.default_rng(seed).normal(0, 0.01, size=(4, 2))

    def state_dict(self) -> dict[str, np.ndarray]:
        """Return the weights."""
        return {"weights": self.weights.copy()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore the weights."""
        self.weights = np.array(state["weights"])


def reinforce_step(
    model: Model, episodes: Sequence[Episode], lr: float, gamma: float
) -> dict[str, float]:
    """One REINFORCE update (discounted returns, normalised over the batch)."""
    policy = LinearSoftmax(model.weights)
    rows: list[tuple[np.ndarray, int, float]] = []
    for episode in episodes:
        g = 0.0
        returns = []
        for t in reversed(episode.transitions):
            g = t.reward + gamma * g
            returns.append(g)
        returns.reverse()
        rows.extend(
            (np.asarray(t.obs), int(t.action), r)
            for t, r in zip(episode.transitions, returns, strict=True)
        )
    if not rows:
        return {"loss": 0.0, "return": 0.0}
    gs = np.array([r for _, _, r in rows])
    advantages = (gs - gs.mean()) / (gs.std() + 1e-8)
    grad = np.zeros_like(model.weights)
    for (obs, action, _), advantage in zip(rows, advantages, strict=True):
        p = policy.probs(obs)
        onehot = np.eye(2)[action]
        grad += np.outer(obs, onehot - p) * advantage
    model.weights = model.weights + lr * grad / len(episodes)
    mean_return = float(np.mean([e.return_ for e in episodes]))
    return {"return": mean_return, "grad_norm": float(np.linalg.norm(grad))}


def train(cfg: DictConfig, log: TrainingLog | None = None, verbose: bool = True) -> dict[str, Any]:
    """Train until the greedy policy's evaluation mean reaches ``train.stop_value``.

    Returns the best evaluation mean, iterations, env steps, seconds and the weights.
    """
    t = cfg.train
    provider = EnvPoolProvider(cfg.env)
    collector = DistributedCollector(provider, make_policy, parallel=cfg.parallel, seed=t.seed)
    eval_collector = DistributedCollector(
        provider, make_policy, parallel=cfg.parallel, seed=t.seed, stream=EVAL
    )
    evaluator = Evaluator(
        None,  # the episodes run on the cluster; the evaluator judges them
        n_episode=t.eval_episodes,
        eval_freq=t.eval_every,
        stop_value=t.stop_value,
    )
    model = Model(t.seed)
    learner = Learner(lambda eps: reinforce_step(model, eps, t.lr, t.gamma), model=model)
    if log is not None:
        log.start()  # the dashboard's "took" and the summary's seconds count the same time
    began = time.perf_counter()
    result: EvalResult | None = None
    for iteration in range(t.max_iters):
        collector.set_weights(model.weights, version=iteration)
        if evaluator.should_eval(iteration):
            eval_collector.set_weights(model.weights, version=iteration)
            episodes = eval_collector.collect(
                episode_ids=range(t.eval_episodes), policy_kwargs={"greedy": True}
            )
            result = evaluator.judge(episodes, iteration, collector.envstep)
            if verbose:
                print(
                    f"iter {iteration:4d}  envstep {collector.envstep:7d}  "
                    f"eval return {result.mean:6.1f} +- {result.std:5.1f}"
                )
            if log is not None:
                log.log(iteration, eval_return=result.mean)
            if result.stop:
                break
        info = learner.train(collector.collect(t.episodes_per_iter))
        if log is not None:
            log.log(iteration + 1, train_return=info["return"])
    summary = {
        "best_eval_return": evaluator.best_mean,
        "last_eval_return": None if result is None else result.mean,
        "iterations": learner.train_iter,
        "envstep": collector.envstep,
        "seconds": time.perf_counter() - began,
        "solved": bool(result is not None and result.stop),
    }
    if log is not None:
        log.finish(summary)
    return {**summary, "weights": model.weights.copy()}


def main(argv: Sequence[str] | None = None) -> int:
    """Train with the packaged config and overrides from the command line.

    Bad input (a mistyped key, a job queue without resources) is reported as
    ``kit`` reports it: one message saying what and how to fix it, exit 2.
    """
    try:
        cfg = kit.load_config(CONFIG, list(sys.argv[1:] if argv is None else argv))
        summary = train(cfg)
    except kit.KitError as exc:
        print(f"cartpole: error: {exc}", file=sys.stderr)
        kit.shutdown()
        return 2
    weights = summary.pop("weights")
    print({k: round(v, 2) if isinstance(v, float) else v for k, v in summary.items()})
    print("weights:", np.round(weights, 3).tolist())
    kit.shutdown()
    return 0 if summary["solved"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
