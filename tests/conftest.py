"""Fixtures shared by the tests: one real LocalCluster session for the whole run, SLURM."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

import kit
from kit.config import parallel_section
from tests.slurm import slurm_problem

LOCAL = {"env": "local", "n_workers": 2}


@pytest.fixture(scope="session", autouse=True)
def _close_sessions_at_the_end() -> Iterator[None]:
    yield
    kit.shutdown()


@pytest.fixture
def local() -> dict[str, Any]:
    """The ``parallel`` section of a 2-process LocalCluster (started once, reused)."""
    return dict(LOCAL)


@pytest.fixture
def local_client(local: dict[str, Any]) -> Any:
    return kit.get_session(local).client


@pytest.fixture(scope="module")
def slurm() -> None:
    """Skip (fail in CI) unless the local SLURM is up."""
    problem = slurm_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"SLURM must run in CI: {problem}")
        pytest.skip(problem)


@pytest.fixture
def closing() -> Iterator[list[dict[str, Any]]]:
    """Parallel sections whose sessions the test wants closed at its end."""
    opened: list[dict[str, Any]] = []
    yield opened
    for parallel in opened:
        for session in kit.sessions():
            if session.parallel == parallel_section(parallel):
                session.close()
