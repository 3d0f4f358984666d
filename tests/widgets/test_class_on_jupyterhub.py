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
from distributed import Client

from kit.cluster import class_runs
from kit.cluster._shared import list_runs
from kit.cluster._teacher import connect, runs_table
from tests.class_client import until
from tests.hub import jupyterhub
from tests.jupyter import ROOT, Shots, log_console_entries, open_and_run_all
from tests.servers import dask_cluster
from tests.widgets.test_live_views_in_browser import NOT_KITS, wait_for_metric_ends
from tests.workloads import lines

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


#: Notebooks the attendees write in the hub (cells), each run with Run All in their browser.
PREAMBLE = (
    "import kit\nfrom kit.examples import quickstart\nfrom kit.widgets.workshop import cluster"
)
#: Bob's: a provider named like Kit's quickstart one, with his own code (-999 for every x).
SPOOF = [
    PREAMBLE,
    "class Fake:\n    built_by = 0\n\n    def __call__(self, x):\n        return -999.0",
    'class ModelProvider(kit.EnvironmentProvider):\n    __module__ = "kit.examples.quickstart"\n\n'
    '    def build_env_local(self):\n        return {"model": Fake()}\n\n'
    "    def make_worker_setup_fn(self):\n        return self.build_env_local",
    'config = quickstart.quickstart_config(["items.stop=4", "output_dir=null"])\n'
    "result = quickstart.Evaluate(ModelProvider(config), parallel=cluster()).run(range(4))\n"
    "print(\"bob's values:\", sorted({r['y'] for r in result.records}))",
]
#: Alice's: Kit's quickstart itself, with the same config as Bob's.
QUICKSTART = [
    PREAMBLE,
    'config = quickstart.quickstart_config(["items.stop=4", "output_dir=null"])\n'
    "result = quickstart.Evaluate(quickstart.ModelProvider(config), parallel=cluster())\n"
    "print(\"alice's values:\", [r['y'] for r in result.run(range(4)).records])",
]


def vocabulary(log: Path) -> list[str]:
    """A provider each attendee defines in their own notebook, alike; its builds go to ``log``."""
    return [
        PREAMBLE + "\nimport os, time",
        f"def build():\n    with open({str(log)!r}, 'a') as out:\n"
        "        out.write(f'{os.getpid()}\\n')\n"
        "    time.sleep(1)  # a model loading: the attendees' first holds overlap\n"
        "    return {'words': 'shared'}",
        "class Vocabulary(kit.EnvironmentProvider):\n    def build_env_local(self):\n"
        "        return build()\n\n    def make_worker_setup_fn(self):\n        return build",
        "class Count(kit.Runner):\n    @staticmethod\n    def forward(idx, words):\n"
        "        return words",
        "records = Count(Vocabulary({'n': 1}), parallel=cluster()).run(range(8)).records\n"
        "print('words:', sorted(set(records)))",
    ]


def held(gate: Path, logs: Path) -> list[str]:
    """Alice's run of 12 items whose last waits for ``gate``; each call logged in ``logs``."""
    return [
        "from tests.workloads import Affine, Paced, toy_config\n" + PREAMBLE,
        f"config = toy_config(None, factor=3, gate={str(gate)!r}, gate_from=11,"
        f" log_dir={str(logs)!r}, log_calls=True)\n"
        "done = Affine(Paced(config), parallel=cluster()).run(12)\n"
        "print('held run:', done.status.value, done.stats.ok)",
    ]


#: Bob's try at cancelling Alice's run, with no key but his own.
CANCEL = [
    PREAMBLE,
    "client = kit.get_session(cluster()).client\n"
    "runs = kit.cluster.class_runs(client)['runs']\n"
    "alices = next(s['run_id'] for s in runs if s['user'] == 'alice')\n"
    "try:\n    kit.cluster.cancel(client, alices)\n"
    "except PermissionError as refused:\n    print('refused:', refused)",
]
#: The teacher's board: the cluster panel on the class cluster.
BOARD = [
    "import os\nfrom kit.widgets import ClusterPanel\n"
    "panel = ClusterPanel({'env': 'remote', 'address': os.environ['KIT_CLASS_CLUSTER']})\n"
    "panel.start_button.click()\npanel",
]


def test_on_jupyterhub_envs_are_shared_by_code_and_runs_cancelled_by_their_owner_alone(
    chromium: Any, tmp_path: Path
) -> None:
    shots, gate, log = Shots(tmp_path / "screenshots"), tmp_path / "gate", tmp_path / "builds.log"
    users = ["alice", "bob", "carol", "tina"]  # tina teaches
    with (
        dask_cluster(tmp_path, 2, threads=2) as address,
        Client(address) as watcher,
        jupyterhub(tmp_path, users, {"KIT_CLASS_CLUSTER": address}, []) as hub,
    ):
        pages = {}
        for user in users:
            page = chromium.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            hub.attendee(user).log_in(page)
            pages[user] = page

        def run(user: str, name: str, cells: list[str]) -> Any:
            attendee = hub.attendee(user)
            open_and_run_all(pages[user], attendee, attendee.write(name, cells))
            return pages[user]

        def said(page: Any, words: str) -> str:
            output = page.locator(".jp-OutputArea-output", has_text=words).first
            output.wait_for(timeout=300_000)
            return str(output.text_content()).strip()

        board = run("tina", "board.ipynb", BOARD)
        # Bob's provider is named like Kit's quickstart's; Alice's run never gets his env.
        assert said(run("bob", "spoof.ipynb", SPOOF), "bob's values:").endswith("[-999.0]")
        alice = said(run("alice", "quickstart.ipynb", QUICKSTART), "alice's values:")
        assert "-999" not in alice and alice.endswith("]"), alice
        # Carol and Alice define one provider alike in their notebooks: built once a worker.
        for user in ("alice", "carol"):
            run(user, "vocabulary.ipynb", vocabulary(log))
        for user in ("alice", "carol"):
            assert said(pages[user], "words:").endswith("['shared']")
        assert len(log.read_text().splitlines()) == 2  # 2 workers, not 2 attendees x 2
        # Bob cannot cancel Alice's run; the teacher's panel shows it going on.
        run("alice", "held.ipynb", held(gate, tmp_path))
        until(lambda: len(lines(tmp_path, "calls.log")) == 11, "alice's first 11 items")
        until(lambda: watcher.run_on_scheduler(list_runs)["runs"], "alice's run's seat")
        refused = said(run("bob", "cancel.ipynb", CANCEL), "refused:")
        assert "is alice's (" in refused, refused
        row = board.locator(".kit-class-runs .kit-class-run", has_text="alice").first
        row.wait_for(timeout=60_000)
        assert "/12" in str(row.text_content()) and "cancel" not in str(row.text_content())
        assert board.locator(".widget-button[title=Start]").is_disabled()  # it runs already
        shots(board, "board", focus=row)
        gate.touch()
        assert said(pages["alice"], "held run:").endswith("completed 12")
        for user, page in pages.items():
            assert log_console_entries(page, "lab") == [], user
