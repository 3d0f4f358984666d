"""Fixtures shared by the tests: one real LocalCluster session for the whole run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import kit

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
