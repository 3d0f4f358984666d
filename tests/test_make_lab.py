"""`make lab`: a terminal opened in JupyterLab has Kit's venv and starts in notebooks/."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import pytest

from tests.jupyter import ROOT, open_terminal, terminal_screen, wait_until_up
from tests.servers import free_port

pytestmark = pytest.mark.slow


def test_a_lab_terminal_has_kit_and_starts_in_the_notebooks_folder(tmp_path: Path) -> None:
    token, port = secrets.token_hex(16), free_port()
    # A shell without the venv: what a person has before `make lab`.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if ".venv" not in p)
    env = dict(os.environ, PATH=path, JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    env.pop("VIRTUAL_ENV", None)
    args = f"--no-browser --port={port} --IdentityProvider.token={token}"
    log_path = tmp_path / "lab.log"
    with log_path.open("w") as log:
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
            wait_until_up(base, token, lab, log_path)
            # The markers are printed, not typed: the echo of the line holds neither.
            command = (
                "echo \"at $(pwd)\"; command -v kit; python -c \"import kit; print('kit', 'ok')\""
            )
            name = open_terminal(base, token)
            screen = terminal_screen(base, token, name, "kit ok", 60, typed=command)
        finally:
            os.killpg(lab.pid, 15)
            lab.wait(timeout=60)
    assert f"at {ROOT / 'notebooks'}" in screen, screen
    assert f"{ROOT / '.venv' / 'bin' / 'kit'}" in screen, screen
    assert "kit ok" in screen, screen
