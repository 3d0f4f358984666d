"""Runners with one planted cause of disagreement each, for ``kit check`` to name.

Module-level, so their providers and setup functions pickle to the workers.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from omegaconf import OmegaConf

from kit import EnvironmentProvider, Runner


class Plain(EnvironmentProvider):
    """The same env on the driver and the workers (no setup of note)."""

    def build_env_local(self) -> dict[str, Any]:
        return {"where": "driver"}

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        return _worker_env


def _worker_env() -> dict[str, Any]:
    return {"where": "worker"}


class Steady(Runner):
    """Deterministic: the same record for an item wherever and however it runs."""

    @staticmethod
    def forward(idx: Any) -> Any:
        if isinstance(idx, list):
            return [Steady.forward(i) for i in idx]
        return {"text": f"item {idx}", "score": idx / 7, "parts": [idx, idx * 2]}

    @staticmethod
    def length(idx: int) -> float:
        return 1.0 + idx % 3


class Unseeded(Runner):
    """Nondeterminism: a random draw without a seed."""

    @staticmethod
    def forward(idx: int) -> dict[str, Any]:
        return {"text": f"item {idx}", "sampled": random.random()}


class Padded(Runner):
    """Batching: a batch is normalised by its own mean, so an item's value depends on its batch."""

    @staticmethod
    def forward(idx: Any) -> Any:
        batch = idx if isinstance(idx, list) else [idx]
        mean = sum(batch) / len(batch)
        records = [{"text": f"item {i}", "centred": i - mean} for i in batch]
        return records if isinstance(idx, list) else records[0]


class Threaded(Runner):
    """Threads: the code takes another path with more threads than two."""

    @staticmethod
    def forward(idx: int) -> dict[str, Any]:
        said = os.environ.get("KIT_WORKER_THREADS", "")
        threads = int(said) if said.isdigit() else os.cpu_count() or 1
        return {"text": f"item {idx}", "path": "blocked" if threads > 2 else "simple"}


class Single(EnvironmentProvider):
    """Precision: the workers build their model in float32, the driver in float64."""

    def build_env_local(self) -> dict[str, Any]:
        return {"dtype": "float64"}

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        return _float32


def _float32() -> dict[str, Any]:
    return {"dtype": "float32"}


class Weighed(Runner):
    """A score in the env's float type."""

    @staticmethod
    def forward(idx: int, dtype: str) -> dict[str, Any]:
        import numpy as np

        return {"text": f"item {idx}", "score": float(np.asarray((idx + 1) / 3, dtype=dtype))}


class Installed(EnvironmentProvider):
    """Versions: the driver and the workers import another copy of a package.

    ``config.driver_path`` and ``config.worker_path`` are folders with a
    ``planted`` package of another version each (and its metadata).
    """

    def build_env_local(self) -> dict[str, Any]:
        return {"planted": _import_from(self.config.driver_path)}

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        path = self.config.worker_path
        return lambda: {"planted": _import_from(path)}


def _import_from(path: str) -> Any:
    if path not in sys.path:
        sys.path.insert(0, path)
    import importlib

    sys.modules.pop("planted", None)
    importlib.invalidate_caches()
    return importlib.import_module("planted")


class Versioned(Runner):
    """Returns the planted package's answer."""

    @staticmethod
    def forward(idx: int, planted: Any) -> dict[str, Any]:
        return {"text": f"item {idx}: {planted.answer(idx)}"}


class Configured(Runner):
    """Config: an interpolation that resolves otherwise where the item runs."""

    @staticmethod
    def forward(idx: int, config: Any = None) -> dict[str, Any]:
        return {"text": f"item {idx} in {OmegaConf.select(config, 'data.lang')}"}


class Local(Runner):
    """Environment: the hour of the epoch in the local time zone."""

    @staticmethod
    def forward(idx: int) -> dict[str, Any]:
        time.tzset()  # as a process started with TZ set sees it (the nanny sets it later)
        return {"text": f"item {idx} at {time.strftime('%H', time.localtime(idx * 3600))}"}


def write_planted(folder: Any, version: str, answer: str) -> str:
    """Write a ``planted`` package of ``version`` (with its metadata) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "planted").mkdir(exist_ok=True)
    (folder / "planted" / "__init__.py").write_text(
        f"def answer(idx):\n    return f'{answer} {{idx}}'\n"
    )
    info = folder / f"planted-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: planted\nVersion: {version}\n")
    (info / "top_level.txt").write_text("planted\n")
    (info / "RECORD").write_text("planted/__init__.py,,\n")
    return str(folder)
