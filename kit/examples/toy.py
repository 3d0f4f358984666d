"""The toy runners Kit's examples run: an env of nothing, a runner that squares, one that halves.

They live here, importable, so that a docstring's example is its one new
line, and a worker unpickles them by name like any user's runner.

Examples
--------
>>> from kit.examples.toy import Env, Half, Square
>>> Square(Env({})).run(range(4)).records
[0, 1, 4, 9]
>>> Half(Env({})).run([1, 0, 5]).failed_indices  # item 0's 10 // 0 failed
[0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kit.provider import EnvironmentProvider
from kit.runner import Runner


class Env(EnvironmentProvider):
    """An env of nothing: the toy runners need no model."""

    def build_env_local(self) -> dict[str, Any]:
        """Return the empty env."""
        return {}

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        """Return what each worker calls once: ``dict``, an empty env."""
        return dict


class Square(Runner):
    """Return each item's index squared."""

    @staticmethod
    def forward(idx: int) -> int:
        """Return ``idx * idx``."""
        return idx * idx


class Half(Runner):
    """Return ten halved ``idx`` times over, as ``10 // idx``: item 0 fails."""

    @staticmethod
    def forward(idx: int) -> int:
        """Return ``10 // idx`` (a ``ZeroDivisionError`` for 0)."""
        return 10 // idx


class Scored(Runner):
    """Return each item's square and a score, ``idx % 3``, that views plot and trackers log."""

    @staticmethod
    def forward(idx: int) -> dict[str, Any]:
        """Return ``{"square": idx * idx, "metrics": {"score": idx % 3}}``."""
        return {"square": idx * idx, "metrics": {"score": idx % 3}}
