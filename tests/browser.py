"""Debian's Chromium driven by playwright (never a downloaded browser)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.servers import free_port, stop_group

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
def browser_server(folder: Path) -> Iterator[str]:
    """Start Chromium behind Playwright's browser server; yield the address to connect to.

    Playwright launches it with the switches it launches any Chromium with, so a
    page is driven as by ``launch()``; every connection (see :func:`browser`)
    gets contexts of its own, closed when it disconnects. Skips (or fails in CI)
    when there is no Chromium. Its output goes to ``folder/server.log``.
    """
    problem = chromium_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests must run in CI: {problem}")
        pytest.skip(problem)
    config = folder / "launch.json"
    options = {
        "executablePath": CHROMIUM,
        "args": ARGS,
        "headless": True,
        "host": "127.0.0.1",
        "port": free_port(),
    }
    config.write_text(json.dumps(options))
    log = folder / "server.log"
    command = [sys.executable, "-m", "playwright", "launch-server", "--browser", "chromium"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Chromium's processes go with it, as one group
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"ws://\S+", log.read_text(errors="replace"))):
            assert proc.poll() is None, f"Playwright's browser server exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"no browser server after 60 s: {log.read_text()}"
            time.sleep(0.1)
        yield found.group(0)
    finally:
        stop_group(proc)


@contextmanager
def browser(endpoint: str) -> Iterator[Any]:
    """Yield the Chromium of :func:`browser_server` at ``endpoint``, connected to from here."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.connect(endpoint)
        try:
            yield chromium
        finally:
            chromium.close()  # this connection's contexts, not the browser
