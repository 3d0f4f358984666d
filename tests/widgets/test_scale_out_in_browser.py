"""Scale out as printed: copied from the page, run in a JupyterLab terminal, completed on SLURM."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.cluster._seats import who
from tests.jupyter import (
    ROOT,
    Jupyter,
    Shots,
    open_and_run_all,
    terminal_screen,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_idle_clusters")]

APP = (
    "import kit\n"
    "from kit import widgets\n"
    "from kit.asr import DecodeProvider, DecodeRunner\n"
    "from kit.examples.asr import CONFIG_PATH\n"
    "cfg = kit.load_config(CONFIG_PATH, ['data.root=data', 'decoder.engine=pocketsphinx',\n"
    "                                    'items.stop=4', 'parallel.env=inline'])\n"
    "app = widgets.Experiment(cfg, DecodeProvider, DecodeRunner, config_path=str(CONFIG_PATH))\n"
    "app"
)


@pytest.fixture
def lab(serve: Callable[..., Jupyter]) -> Jupyter:
    """The session's JupyterLab as ``make lab`` starts it: its terminals have Kit's venv."""
    return serve("lab", as_make_lab=True)


def type_in_terminal(page: Any, text: str) -> None:
    page.locator(".jp-Terminal").last.click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def test_the_printed_command_runs_in_a_lab_terminal_and_completes_on_slurm(
    lab: Jupyter, chromium: Any, slurm: None, tmp_path: Path
) -> None:
    from kit.examples.asr import build_corpus

    build_corpus(lab.folder / "data", n_sentences=2, n_digits=2, voices=("slt",))
    shots = Shots(tmp_path / "screenshots")
    context = chromium.new_context(viewport={"width": 1300, "height": 1100})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        open_and_run_all(page, lab, lab.write("scale.ipynb", [APP]))
        section = page.locator(
            ".jupyter-widget-Collapse-header", has_text=re.compile(r"^\s*decoder\s*$")
        )
        section.first.wait_for(timeout=90_000)
        section.first.click()
        beam = page.locator(
            ".widget-inline-hbox", has=page.locator("label", has_text=re.compile("^beam_size$"))
        ).locator("input")
        beam.first.wait_for(timeout=90_000)
        beam.first.fill("1")
        beam.first.press("Enter")
        page.locator("button.widget-button", has_text="Scale out").first.click()
        command_box = page.locator(".kit-scale-out").first
        command_box.wait_for(timeout=30_000)
        shots(page, "scale-out-command", focus=command_box)
        page.locator("button.kit-copy").first.click()
        page.locator("button.kit-copy", has_text="Copied").first.wait_for(timeout=10_000)
        command = page.evaluate("navigator.clipboard.readText()")
        assert command == (command_box.text_content() or "").strip()
        # The Experiment's runs folder: the user's and the notebook's (runs/<user>/scale/).
        assert command.startswith(f"kit submit runs/{who()}/scale/decoderunner/decode.yaml ")
        assert "decoder.beam_size=1" in command and "parallel.env=slurm" in command
        # A terminal from the launcher, as a person opens one.
        page.get_by_title(re.compile("^New Launcher")).first.click()
        page.locator(".jp-LauncherCard", has_text="Terminal").first.click()
        page.locator(".jp-Terminal").last.wait_for(timeout=30_000)
        name = lab.api("terminals")[-1]["name"]  # the one the launcher opened
        type_in_terminal(page, command)
        screen = terminal_screen(lab.base, lab.token, name, r"output \S+\r?\n", 120)
        shots(page, "submitted")
        found = re.search(r"submitted 4 items: driver pid \d+, output (\S+)", screen)
        assert found, screen[-2000:]
        output = found.group(1)
        result = kit.attach(lab.folder / output).result(timeout=300)
        assert result.status == "completed" and result.stats.ok == 4
        type_in_terminal(page, f"kit status {output}")
        screen = terminal_screen(lab.base, lab.token, name, r"done, \d+ failed", 60)
        shots(page, "status-completed")
        assert f"{output}: completed" in screen and "4/4 (100%) done" in screen
        assert "command not found" not in screen and "Traceback" not in screen
        assert "dashboard:" not in screen.split("kit status")[-1]  # its cluster is gone

        # Notebook 05's command, as its page shows it, in the same terminal.
        shutil.copy(ROOT / "notebooks" / "05_rl_cartpole.ipynb", lab.folder / "rl.ipynb")
        notebook = context.new_page()  # read in a tab of its own, as a person would
        notebook.goto(lab.url("rl.ipynb"))
        shown = notebook.locator(".jp-RenderedMarkdown pre", has_text="kit.examples.cartpole")
        shown.first.wait_for(timeout=60_000)
        printed = (shown.first.text_content() or "").strip()
        notebook.close()
        assert "parallel.env=slurm" in printed and "parallel.options.memory" in printed
        type_in_terminal(page, printed)
        screen = terminal_screen(lab.base, lab.token, name, r"'solved': (True|False)", 600)
        shots(page, "cartpole-on-slurm")
        trained = screen.split("kit.examples.cartpole")[-1]
        assert "'solved': True" in trained, trained[-2000:]
        assert "Traceback" not in trained and "error" not in trained
    finally:
        context.close()
        lab.shut_down_kernels()
