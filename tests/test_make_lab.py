"""`make lab`: a terminal opened in JupyterLab has Kit's venv and starts in notebooks/."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.jupyter import ROOT, free_port

pytestmark = pytest.mark.slow


async def run_in_terminal(base: str, token: str, command: str, until: str) -> str:
    """Open a terminal as the launcher does, type ``command``, return the screen once ``until``."""
    from tornado.websocket import websocket_connect

    request = urllib.request.Request(
        f"{base}/api/terminals?token={token}",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        name = json.load(answer)["name"]
    ws_base = base.replace("http://", "ws://")
    socket = await websocket_connect(f"{ws_base}/terminals/websocket/{name}?token={token}")
    await socket.write_message(json.dumps(["stdin", command + "\r"]))
    screen = ""
    deadline = time.monotonic() + 60
    while until not in screen and time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(socket.read_message(), timeout=5)
        except TimeoutError:
            continue
        if message is None:
            break
        kind, *rest = json.loads(message)
        if kind == "stdout":
            screen += rest[0]
    socket.close()
    return screen


def test_a_lab_terminal_has_kit_and_starts_in_the_notebooks_folder(tmp_path: Path) -> None:
    token, port = secrets.token_hex(16), free_port()
    # A shell without the venv: what a person has before `make lab`.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if ".venv" not in p)
    env = dict(os.environ, PATH=path, JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    env.pop("VIRTUAL_ENV", None)
    args = f"--no-browser --port={port} --IdentityProvider.token={token}"
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        # LAB_CORPUS= : the spoken corpus is notebook 02's business, not this test's.
        ["make", "--no-print-directory", "lab", f"LAB_ARGS={args}", "LAB_CORPUS="],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                assert lab.poll() is None, (tmp_path / "lab.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "make lab did not start JupyterLab"
                time.sleep(0.5)
        # The markers are printed, not typed: the echo of the line holds neither.
        command = "echo \"at $(pwd)\"; command -v kit; python -c \"import kit; print('kit', 'ok')\""
        screen = asyncio.run(run_in_terminal(base, token, command, "kit ok"))
    finally:
        os.killpg(lab.pid, 15)
        lab.wait(timeout=60)
        log.close()
    assert f"at {ROOT / 'notebooks'}" in screen, screen
    assert f"{ROOT / '.venv' / 'bin' / 'kit'}" in screen, screen
    assert "kit ok" in screen, screen
