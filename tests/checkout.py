"""The suite leaves the checkout as it found it: no run folder of a test's in ``runs/``.

A run without ``output_dir`` writes ``runs/<Runner>-<config hash>`` in the working
directory. A test that did so in the checkout would leave records the next suite reads
back as its own (a resume), so one suite's result would depend on the last one's. The
first process of the suite lists ``runs/`` before and after, and fails the session
naming each new entry; ``runs/test-data`` is the cache of the real speech the tests
read (tests/real_speech.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

RUNS = Path(__file__).resolve().parents[1] / "runs"
SHARED = {"test-data"}
_BEFORE = pytest.StashKey[set[str]]()


def _entries() -> set[str]:
    return {entry.name for entry in RUNS.iterdir()} - SHARED if RUNS.is_dir() else set()


def _first_process() -> bool:
    return os.environ.get("PYTEST_XDIST_WORKER") is None


def pytest_sessionstart(session: pytest.Session) -> None:
    if _first_process():
        session.config.stash[_BEFORE] = _entries()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _first_process() or _BEFORE not in session.config.stash:
        return
    left = sorted(_entries() - session.config.stash[_BEFORE])
    if left:
        print(
            f"\nthe suite wrote into the checkout: {', '.join(f'runs/{n}' for n in left)}"
            " (a test ran without an output_dir outside a scratch folder)"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
