"""A decoding-like runner for reuse tests: forward reads ``decoder.*``, ``finish`` scores.

Its items are numbers; ``forward`` "decodes" item ``i`` to ``i * beam`` and
counts its calls in :data:`CALLS` (per process: runs here are inline), so a
test can say how often it ran.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from kit import EnvironmentProvider, Runner

#: Forward calls in this process, by item.
CALLS: Counter[Any] = Counter()


def count(idx: Any) -> None:
    CALLS[idx] += 1


def scored(hyp: int, config: Any) -> dict[str, Any]:
    """What the scoring keys make of a hypothesis (a normaliser, a metric)."""
    text = f"hyp {hyp}"
    shown = {"upper": text.upper(), "plain": text, "none": ""}[config.scoring.normalizer]
    return {"shown": shown, config.scoring.metric: hyp % 7}


class Numbers(EnvironmentProvider):
    """No heavy object: the env is built from ``decoder`` alone."""

    env_keys = ("decoder",)

    def build_env_local(self) -> dict[str, Any]:
        return {}

    def make_worker_setup_fn(self) -> Any:
        return dict


class Decode(Runner):
    """``hyp`` depends on ``decoder.*`` only; the scoring keys are ``finish``'s."""

    forward_keys: ClassVar[tuple[str, ...] | None] = ("decoder.*",)

    @staticmethod
    def forward(idx: Any, config: Any = None) -> Any:
        if isinstance(idx, list):  # a batch (runner.batch_size)
            return [Decode.forward(i, config) for i in idx]
        count(idx)
        hyp = idx * config.decoder.beam
        return {"id": idx, "hyp": hyp, **scored(hyp, config)}

    @staticmethod
    def finish(record: dict[str, Any], config: Any) -> dict[str, Any]:
        return {"id": record["id"], "hyp": record["hyp"], **scored(record["hyp"], config)}
