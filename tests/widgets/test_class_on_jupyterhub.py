"""A class on a real JupyterHub: three attendees log in with Chromium and run the workshop
notebook at once against the class's one cluster, while the teacher lists the runs."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from kit.cluster import class_runs
from kit.cluster._teacher import connect, runs_table
from tests.hub import jupyterhub
from tests.jupyter import ROOT, Shots, log_console_entries, open_and_run_all
from tests.servers import dask_cluster
from tests.widgets.test_live_views_in_browser import NOT_KITS, wait_for_metric_ends

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_idle_clusters")]

CLASS = ["alice", "bob", "carol"]
WORKSHOP = ROOT / "notebooks" / "04_workshop.ipynb"
KIT = str(Path(sys.executable).with_name("kit"))


def located(message: Any) -> str:
    """Return a console error's text with the address it came from.

    "Failed to load resource" alone does not say which request failed.
    """
    if message.text in NOT_KITS:
        return str(message.text)
    return f"{message.text} ({message.location.get('url', 'no address')})"


class Teacher(threading.Thread):
    """Types ``kit cluster runs ADDRESS`` once, then watches what it prints, many times a second.

    A command a second would sample: on a busy machine each one takes seconds to start,
    and an attendee's short run could begin and end between two of them. The listing
    is drawn by the same functions the command prints with, over one connection.
    """

    def __init__(self, address: str) -> None:
        super().__init__(name="teacher", daemon=True)
        self.address = address
        self.listed: set[str] = set()
        self.listings: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        environ = dict(os.environ, PYTHONPATH=str(ROOT))
        said = subprocess.run(
            [KIT, "cluster", "runs", self.address], capture_output=True, text=True, env=environ
        )
        assert said.returncode == 0, said.stderr
        self.listings.append(said.stdout)
        client = connect(self.address)
        try:
            while not self.done.wait(0.2):
                listing = class_runs(client)
                self.listings.append(runs_table(listing))
                self.listed |= {str(seat["user"]) for seat in listing["runs"]}
        finally:
            client.close()


def test_a_class_of_three_runs_the_workshop_on_one_cluster_through_jupyterhub(
    chromium: Any, tmp_path: Path
) -> None:
    shots = Shots(tmp_path / "screenshots")
    with dask_cluster(tmp_path, 2, threads=2) as address:
        teacher = Teacher(address)
        # The teacher's settings for every attendee: the class cluster, and (for this test)
        # the solutions, so each notebook runs top to bottom.
        environment = {"KIT_CLASS_CLUSTER": address, "KIT_WORKSHOP_SOLUTIONS": "1"}
        with jupyterhub(tmp_path, CLASS, environment, [WORKSHOP]) as hub:
            pages: dict[str, tuple[Any, Any, list[str]]] = {}
            for user in CLASS:
                page = chromium.new_context(viewport={"width": 1300, "height": 1100}).new_page()
                console: list[str] = []
                page.on("console", lambda m, c=console: m.type == "error" and c.append(located(m)))
                page.on("pageerror", lambda error, c=console: c.append(str(error)))
                attendee = hub.attendee(user)
                attendee.log_in(page)
                pages[user] = (page, attendee, console)
            teacher.start()
            for page, attendee, _ in pages.values():
                open_and_run_all(page, attendee, WORKSHOP.name)
            for user, (page, _, console) in pages.items():
                header = page.locator(".kit-header", has_text="completed · 600/600 items").first
                header.wait_for(timeout=300_000)
                assert wait_for_metric_ends(page, {"known_share": 600}) == {"known_share": 600}
                checked = page.locator(".jp-OutputArea-output", has_text="passes its checks")
                checked.nth(3).wait_for(timeout=300_000)  # exercise 4's, the last
                shots(page, f"{user}-dashboard", focus=header)
                said = page.locator(".jp-OutputArea-output", has_text="runs on:").first
                assert f"stored in: runs/{user}/04_workshop" in (said.text_content() or "")
                assert log_console_entries(page, "lab") == [], user
                assert [e for e in console if e not in NOT_KITS] == [], (user, console[:3])
            teacher.done.set()
            teacher.join(timeout=60)
    # The teacher saw every attendee's runs; each attendee's sweep went to their own folder.
    assert set(CLASS) <= teacher.listed, teacher.listings[-3:]
    for user in CLASS:
        sweep = hub.homes / user / "runs" / user / "04_workshop" / "sweep-solution"
        assert (sweep / "sweep.json").is_file(), sweep
