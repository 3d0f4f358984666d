"""Debian's Chromium driven by playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_problem() -> str | None:
    if not os.path.exists(CHROMIUM) and shutil.which("chromium") is None:
        return "Debian's chromium is not installed (run .ci/system-deps.sh as root)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return None


@contextmanager
def browser() -> Iterator[Any]:
    """Yield a headless Chromium browser; skip (or fail in CI) when there is none."""
    problem = chromium_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests must run in CI: {problem}")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
