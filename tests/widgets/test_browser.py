"""End to end in a real browser: JupyterLab, Debian's Chromium, the Experiment app."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import browser

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
    "import widgets\n"
    "from tests.workloads import Affine, ToyProvider, toy_config",
    "config = toy_config(sleep=0.05)\n"
    "config.parallel = {'env': 'local', 'n_workers': 2}\n"
    "app = widgets.Experiment(\n"
    "    config, ToyProvider, Affine, indices=range(100), config_path='exp.yaml'\n"
    ")\n"
    "app",
]


def notebook(cells: list[str]) -> dict:
    return {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": src,
                "outputs": [],
                "execution_count": None,
            }
            for src in cells
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """JupyterLab on 127.0.0.1 serving a folder with the test notebook."""
    folder = tmp_path / "lab"
    folder.mkdir()
    (folder / "e2e.ipynb").write_text(json.dumps(notebook(CELLS)))
    token, port = secrets.token_hex(16), free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
    )
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={folder}",
            "--allow-root",
            "--LabApp.news_url=",
            "--ServerApp.disable_check_xsrf=False",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "JupyterLab did not start"
                time.sleep(0.5)
        yield base, token, tmp_path
    finally:
        proc.terminate()  # shuts the kernel down, which closes its LocalCluster
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_edit_run_and_watch_in_jupyterlab(lab: tuple[str, str, Path]) -> None:
    base, token, out = lab
    shots = out / "screenshots"
    shots.mkdir()
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(
            f"{base}/lab/workspaces/e2e-{uuid.uuid4().hex[:8]}/tree/e2e.ipynb?reset&token={token}"
        )
        page.locator(".jp-Notebook").wait_for(timeout=60_000)
        accept = page.locator(".jp-Dialog .jp-mod-accept")
        try:
            accept.wait_for(timeout=5_000)
            accept.click()
        except Exception:
            pass  # no kernel dialog this time
        page.get_by_text("Run", exact=True).first.click()
        page.get_by_text("Run All Cells", exact=True).click()
        factor = page.locator(
            ".widget-text", has=page.locator("label", has_text=re.compile(r"^factor$"))
        ).locator("input")
        factor.wait_for(timeout=90_000)
        page.screenshot(path=str(shots / "1-loaded.png"))

        # Type a new value into the ConfigEditor, as a person would.
        factor.fill("5")
        factor.press("Enter")
        # The overrides view (folded, so hidden) follows the edit.
        page.wait_for_function(
            "() => [...document.querySelectorAll('.kit-overrides')]"
            ".some(e => e.textContent.includes('factor=5'))",
            timeout=30_000,
        )

        page.locator("button.widget-button", has_text=re.compile(r"^\s*Run\s*$")).click()
        header = page.locator(".kit-header").first
        try:
            header.wait_for(timeout=60_000)
        except Exception:
            page.screenshot(path=str(shots / "failed-no-dashboard.png"), full_page=True)
            raise
        page.locator(".kit-header", has_text="(100%)").first.wait_for(timeout=90_000)
        rows = page.locator(".kit-results tr.kit-ok")
        rows.first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(shots / "2-done.png"), full_page=True)
        assert rows.count() == 10
        texts = [rows.nth(i).text_content() or "" for i in range(10)]
        assert texts[3].replace(" ", "") == "3316"  # index 3, idx 3, y = 3 * 5 + 1
        assert "10/10" in (header.text_content() or "")
        history = page.locator(".kit-history").first.text_content() or ""
        assert "(first run)" in history
