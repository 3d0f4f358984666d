"""The runner bench_explore.py sweeps: a recognizer's wait per item, a score ``finish`` remakes.

``forward`` waits ``work_ms`` (a decoding's time, the GIL released, as a
native recognizer does) and counts its calls in :data:`CALLS`; its output
depends on ``decoder.*`` alone, its score on ``scoring.*``.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from kit import EnvironmentProvider, Runner

#: Forward calls in this process, by item.
CALLS: Counter[Any] = Counter()


def count(idx: Any) -> None:
    CALLS[idx] += 1


def scored(hyp: int, config: Any) -> dict[str, Any]:
    text = f"hyp {hyp}"
    shown = {"whisper": text.upper(), "basic": text, "none": ""}[config.scoring.normalizer]
    return {"hyp_norm": shown, "wer": (hyp % 7) / 7}


class Waits(EnvironmentProvider):
    """No heavy object: the env is built from ``decoder`` alone."""

    env_keys = ("decoder",)

    def build_env_local(self) -> dict[str, Any]:
        return {}

    def make_worker_setup_fn(self) -> Any:
        return dict


class Decodes(Runner):
    """``hyp`` depends on ``decoder.*``; ``finish`` scores it under ``scoring.*``."""

    forward_keys = ("decoder.*",)

    @staticmethod
    def forward(idx: Any, config: Any = None) -> dict[str, Any]:
        count(idx)
        time.sleep(config.decoder.work_ms / 1000)
        hyp = idx * config.decoder.beam_size
        return {"id": idx, "hyp": hyp, **scored(hyp, config)}

    @staticmethod
    def finish(record: dict[str, Any], config: Any) -> dict[str, Any]:
        return {"id": record["id"], "hyp": record["hyp"], **scored(record["hyp"], config)}
