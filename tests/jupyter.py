"""A real Jupyter server (JupyterLab 4 or Notebook 7) and Chromium pages on it, for flow tests."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
#: The two front ends the manual promises.
UIS = ("lab", "notebook")


def notebook(cells: list[str]) -> dict[str, Any]:
    """A notebook document with these code cells."""
    return {
        "cells": [
            {
                "cell_type": "code",
                "id": f"cell-{number}",
                "metadata": {},
                "source": src,
                "outputs": [],
                "execution_count": None,
            }
            for number, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


@dataclass
class Jupyter:
    """A running Jupyter server serving ``folder``."""

    ui: str
    base: str
    token: str
    folder: Path
    opened: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        if self.ui == "notebook":
            return f"{self.base}/notebooks/{name}?token={self.token}"
        # A fresh workspace: JupyterLab would otherwise restore the last one's tabs.
        workspace = f"t-{uuid.uuid4().hex[:8]}"
        return f"{self.base}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def write(self, name: str, cells: list[str]) -> str:
        (self.folder / name).write_text(json.dumps(notebook(cells)))
        return name

    def api(self, path: str, body: dict[str, Any] | None = None, method: str = "GET") -> Any:
        """Call the server's REST API; return the answer's JSON (None when empty)."""
        request = urllib.request.Request(
            f"{self.base}/api/{path}?token={self.token}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def shut_down_kernels(self) -> None:
        """Stop every kernel (and the clusters they started) between tests."""
        for kernel in self.api("kernels"):
            self.api(f"kernels/{kernel['id']}", method="DELETE")


def wait_until_up(base: str, token: str, proc: subprocess.Popen[Any], log: Path) -> None:
    """Wait (up to 2 minutes) until the Jupyter server at ``base`` answers."""
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
            return
        except OSError:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"Jupyter did not start: {log.read_text()[-2000:]}"
            time.sleep(0.5)


def open_terminal(base: str, token: str) -> str:
    """Open a terminal as JupyterLab's launcher does (in the server's folder); return its name."""
    request = urllib.request.Request(
        f"{base}/api/terminals?token={token}",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        name: str = json.load(answer)["name"]
        return name


async def _read_terminal(url: str, typed: str | None, until: str, timeout: float) -> str:
    from tornado.websocket import websocket_connect

    socket = await websocket_connect(url)
    if typed is not None:
        await socket.write_message(json.dumps(["stdin", typed + "\r"]))
    screen = ""
    deadline = time.monotonic() + timeout
    try:
        while not re.search(until, screen) and time.monotonic() < deadline:
            try:
                message = await asyncio.wait_for(socket.read_message(), timeout=2)
            except TimeoutError:
                continue
            if message is None:
                break
            kind, *rest = json.loads(message)
            if kind == "stdout":
                screen += rest[0]
    finally:
        socket.close()
    return screen


def terminal_screen(
    base: str, token: str, name: str, until: str, timeout: float, typed: str | None = None
) -> str:
    """Return what terminal ``name`` printed (a new client gets it replayed) once ``until``.

    ``typed`` is typed first (with Enter). Runs on a thread of its own:
    playwright's sync API may hold an event loop on this one.
    """
    url = f"{base.replace('http://', 'ws://')}/terminals/websocket/{name}?token={token}"
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _read_terminal(url, typed, until, timeout)).result()


def config_dir(folder: Path) -> Path:
    """Write a Jupyter config folder (``JUPYTER_CONFIG_DIR``) set up as ``make lab`` sets up."""
    # No "Jupyter news?" prompt over the notebook (user settings here).
    news = folder / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # Widget state saved with the notebook, so a notebook reopened on a fresh kernel
    # shows the last picture of each widget, not "model not found".
    widgets = folder / "lab" / "user-settings" / "@jupyter-widgets" / "jupyterlab-manager"
    widgets.mkdir(parents=True)
    (widgets / "plugin.jupyterlab-settings").write_text('{"saveState": true}')
    # Kit's server extension on, as a wheel install of Kit has it (editable installs lack it).
    enabled = folder / "jupyter_server_config.d"
    enabled.mkdir(parents=True)
    extension = ROOT / "kit" / "widgets" / "jupyter-server-extension.json"
    shutil.copy(extension, enabled / "kit-lab.json")
    return folder


@contextmanager
def jupyter_server(ui: str, tmp: Path, *, as_make_lab: bool = False) -> Iterator[Jupyter]:
    """Start JupyterLab (``ui="lab"``) or Notebook 7 on 127.0.0.1 with a token.

    ``as_make_lab`` gives it make lab's terminals: bash with Kit's venv on PATH.
    """
    folder = tmp / "served"
    folder.mkdir(parents=True)
    token, port = secrets.token_hex(16), free_port()
    config_dir(tmp / "jupyter-config")
    # The test workloads live in this repository: its kernels import them (tests.workloads)
    # without a sys.path cell, which the manual's pictures would show.
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    # The kernels' sockets (see --KernelManager.transport below): a short folder of the
    # server's own, as a Unix socket's path holds at most 107 bytes.
    runtime = tempfile.mkdtemp(prefix="kr")
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=runtime,
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        PYTHONPATH=python_path,
    )
    module = "jupyterlab" if ui == "lab" else "notebook"
    lab_config = []
    if as_make_lab:
        venv = Path(sys.executable).parent.parent
        env.update(KIT_VENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
        lab_config = [f"--config={ROOT / 'notebooks' / '.kit-lab' / 'jupyter_server_config.py'}"]
    log_path = tmp / f"{ui}.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={port}",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={folder}",
                "--allow-root",
                # Kernels on Unix sockets, not TCP ports: a session's server kept dialing
                # the ports of kernels shut down long before (ZMQ reconnects, ~6 a second
                # each), and the kernel hands a freed port out again, here to another
                # test's TLS cluster, which logged each knock as a failed handshake.
                "--KernelManager.transport=ipc",
                *lab_config,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(base, token, proc, log_path)
            yield Jupyter(ui, base, token, folder)
        finally:
            proc.terminate()  # shuts the kernels down, which close their clusters
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            shutil.rmtree(runtime, ignore_errors=True)


def save(page: Any, notebook: Path) -> None:
    """Save the notebook (Ctrl+S) as a person would; wait until it is on disk."""
    before = notebook.stat().st_mtime_ns
    page.locator(".jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while notebook.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, f"{notebook.name} was not saved"
        page.wait_for_timeout(200)


#: Where ``make screenshots`` has the browser tests put the manual's pictures.
PICTURES = "KIT_DOCS_PICTURES"


class Shots:
    """Numbered screenshots of each step, in the test's tmp folder, to look at.

    A step named as one of the manual's pictures (``picture=``) is also copied
    into the folder ``$KIT_DOCS_PICTURES`` names, when it is set (``make
    screenshots``) and ``publish`` is true (in one of the two front ends).
    """

    def __init__(self, folder: Path, publish: bool = False) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.publish = publish

    def __call__(self, page: Any, step: str, focus: Any = None, picture: str | None = None) -> Path:
        """Save what the window shows, scrolled to ``focus`` (a locator) when given.

        The notebook scrolls inside the page, so a full-page shot would show no more.
        """
        if focus is not None:
            try:
                focus.scroll_into_view_if_needed()
            except Exception:
                # A dashboard whose view missed updates is drawn again whole, once: the
                # element found a moment ago may have just been replaced. Find it again.
                focus.wait_for(timeout=30_000)
                focus.scroll_into_view_if_needed()
        self.count += 1
        path = self.folder / f"{self.count}-{step}.png"
        page.screenshot(path=str(path))
        pictures = os.environ.get(PICTURES)
        if picture and pictures and self.publish:
            shutil.copyfile(path, Path(pictures) / f"{picture}.png")
        return path


#: What shows a kernel connected and ready: JupyterLab's status bar ("Python 3
#: (ipykernel) | Idle"), Notebook 7's kernel indicator (faded, with no words, once
#: the kernel is idle or busy). Both read the page's own session, not the server's.
KERNEL_READY = {
    "lab": ".jp-StatusBar-TextItem:text-matches('\\| (Idle|Busy)$')",
    "notebook": ".jp-NotebookKernelStatus-fade:not(.jp-NotebookKernelStatus-info)",
}


def kernel_state(jupyter: Jupyter, name: str) -> tuple[str, str] | None:
    """``(execution_state, last_activity)`` of notebook ``name``'s kernel, as the server sees it.

    None while the notebook has no session with a kernel. ``last_activity``
    changes whenever the kernel sends or gets a message.
    """
    for session in jupyter.api("sessions"):
        kernel = session.get("kernel") or {}
        if session.get("path") == name and kernel.get("last_activity"):
            return str(kernel.get("execution_state")), str(kernel["last_activity"])
    return None


def wait_until_quiet(jupyter: Jupyter, name: str, timeout: float = 120) -> None:
    """Return once notebook ``name``'s kernel is idle and got no message for half a second.

    A kernel running a queue of cells is idle for a moment between two of
    them; half a second without a message is the queue's end.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        state = kernel_state(jupyter, name)
        if state is not None and state[0] == "idle" and state == last:
            return
        assert time.monotonic() < deadline, f"{name}: the kernel never became idle: {state}"
        last = state
        time.sleep(0.5)


def open_and_run_all(page: Any, jupyter: Jupyter, name: str) -> None:
    """Open a notebook as a person would and click Run → Run All Cells, once.

    A person clicks once the page shows its kernel ready: Run All before then
    makes JupyterLab ask to "Select Kernel", and accepting that starts a second
    kernel while the first is coming up. Should the dialog show anyway, it is
    cancelled, and the clicks are made again: that Run All ran nothing. Any
    other dialog is a finding: the test fails with its text.

    Run All is never sent twice. A second one, queued behind the first, clears
    every output the first run gives (the cells now wait for the second): the
    test would wait for the notebook's whole run twice, and see only the
    second. Under load the page may take more than the 20 s waited for to
    show the first cell running ([*] or [1]); the clicks are made again then
    only if the kernel got no message since them (the server says when it
    last did): a click that reached nothing.
    """
    page.goto(jupyter.url(name))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    page.locator(KERNEL_READY[jupyter.ui]).first.wait_for(state="attached", timeout=120_000)
    # The server's side too: the notebook's kernel exists, is idle and quiet, so that
    # from here on only what the page sends changes its activity.
    wait_until_quiet(jupyter, name)
    dialog = page.locator(".jp-Dialog")
    started = page.locator(".jp-InputPrompt", has_text=re.compile(r"\[(\*|\d+)\]")).first
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if dialog.count():
            text = dialog.first.inner_text()
            if "Select Kernel" not in text:
                raise AssertionError(f"{name}: JupyterLab showed a dialog: {text!r}")
            dialog.first.locator(".jp-mod-reject").first.click(timeout=5_000)
            continue
        before = kernel_state(jupyter, name)
        try:
            page.get_by_text("Run", exact=True).first.click(timeout=5_000)
            page.get_by_text("Run All Cells", exact=True).click(timeout=5_000)
            started.wait_for(timeout=20_000)
            return
        except Exception:
            if started.count():
                return
            now = kernel_state(jupyter, name)
            if now is not None and before is not None and now[1] != before[1]:
                # The kernel got the run: wait for the page to show it, never send another.
                started.wait_for(timeout=max(1_000, (deadline - time.monotonic()) * 1000))
                return
            # A dialog came in between, or the clicks reached nothing; a menu left
            # open would take the next click, so it is closed first.
            if not dialog.count():
                page.keyboard.press("Escape")
    started.wait_for(timeout=1_000)


def log_console_entries(page: Any, ui: str) -> list[str]:
    """Open JupyterLab's log console (View → Show Log Console) and return every entry.

    Notebook 7 has no log console: there the browser's console is what is read.
    """
    if ui != "lab":
        return []
    page.get_by_text("View", exact=True).first.click()
    page.get_by_text("Show Log Console", exact=True).click()
    panel = page.locator(".jp-LogConsolePanel").first
    panel.wait_for(timeout=30_000)
    # At its default level (warning) it shows stderr and errors: where tracebacks land.
    texts: list[str] = panel.locator(".jp-OutputArea-output").all_text_contents()
    return texts
