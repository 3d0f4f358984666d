"""The workloads ``bench_check.py`` forecasts: sleeps and busy loops of lognormal lengths.

A config's ``work`` section says them: ``count`` items, lognormal around
``median`` seconds with ``sigma``, from ``seed``; ``sorted`` puts the short
ones first (a corpus sorted by length). ``SleepsByLength`` and ``SpinsByLength``
name the item's length as its cost (``cost_by``), as decoding names an
utterance's duration.
"""

from __future__ import annotations

import functools
import random
import time
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit import EnvironmentProvider, Runner


def lengths(work: Any) -> list[float]:
    """Each item's seconds of work, lognormal, from the config's ``work`` section."""
    rng = random.Random(int(work.seed))
    median, sigma = float(work.median), float(work.sigma)
    found = [median * rng.lognormvariate(0.0, sigma) for _ in range(int(work.count))]
    return sorted(found) if work.get("sorted") else found


class Lengths(EnvironmentProvider):
    """Each worker builds the items' lengths from the config (once)."""

    def build_env_local(self) -> dict[str, Any]:
        return {"lengths": lengths(self.config.work)}

    def make_worker_setup_fn(self) -> Any:
        return functools.partial(_env, OmegaConf.to_container(self.config.work))


def _env(work: Any) -> dict[str, Any]:
    return {"lengths": lengths(DictConfig(work))}


class Sleeps(Runner):
    """Each item sleeps its length: it holds a slot, not a CPU."""

    @staticmethod
    def forward(idx: int, lengths: list[float]) -> dict[str, Any]:
        time.sleep(lengths[idx])
        return {"idx": idx}

    @staticmethod
    def length(idx: int, lengths: list[float]) -> float:
        return lengths[idx]


class SleepsByLength(Sleeps):
    cost_by = "length"


class Spins(Runner):
    """Each item computes for its length of CPU time: items share the machine's cores."""

    @staticmethod
    def forward(idx: int, lengths: list[float]) -> dict[str, Any]:
        until = time.thread_time() + lengths[idx]
        total = 0
        while time.thread_time() < until:
            total += sum(range(1000))
        return {"idx": idx}

    @staticmethod
    def length(idx: int, lengths: list[float]) -> float:
        return lengths[idx]


class SpinsByLength(Spins):
    cost_by = "length"
