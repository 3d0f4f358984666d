"""The cluster panel as a teacher's view of a class: every attendee's run, and a cancel.

Two attendee processes run on one real scheduler; the teacher's panel, in
this process, lists both and stops one, as ``kit cluster runs``/``cancel`` do.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.cluster._shared import list_runs
from kit.cluster._teacher import claim
from kit.widgets import ClusterPanel
from tests.class_client import attendee, reports, until
from tests.servers import dask_cluster
from tests.workloads import lines


def gated(logs: Path, gate: Path, factor: int) -> dict[str, Any]:
    """Twelve items whose last waits for ``gate``: the run goes on until the test says."""
    logs.mkdir()
    return {"items": 12, "factor": factor, "log_dir": str(logs), "log_calls": True,
            "gate": str(gate), "gate_from": 11}  # fmt: skip


def test_the_teachers_panel_lists_the_class_runs_and_cancels_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "teacher"))  # the token's folder
    gate = tmp_path / "gate"
    with dask_cluster(tmp_path, 2, threads=2) as address:
        panel = ClusterPanel({"env": "remote", "address": address}, refresh_seconds=0.2)
        panel.start_button.click()
        session = panel.ready.result(timeout=60) if panel.ready else None
        try:
            alice = attendee(address, gated(tmp_path / "a", gate, 3), user="alice")
            bob = attendee(address, gated(tmp_path / "b", gate, 4), user="bob")
            assert session is not None and session.client is not None
            client = session.client
            until(lambda: len(client.run_on_scheduler(list_runs)["runs"]) == 2, "both runs")
            for who in "ab":
                until(lambda w=who: len(lines(tmp_path / w, "calls.log")) == 11, f"{who}'s items")
            panel.refresh()
            page = html.unescape(re.sub(r"<[^>]+>", " ", panel.runs.value))
            assert "2 runs on 4 worker threads" in page
            assert panel.n_workers.value == 2  # the class cluster's workers, not the config's
            # Both wait on their last item; each holds half of the 4 threads.
            assert re.search(r"alice\s+\S+\s+tests\.workloads\.Affine\s+\d+/12\s+0\s+2", page), page
            assert "bob" in page and "held by 1 run" in page
            options = panel.teacher.run_choice.options
            choices = dict((label.split(" · ")[1], run) for label, run in options)
            assert set(choices) == {"alice", "bob"} and not panel.teacher.cancel_button.disabled
            panel.teacher.run_choice.value = choices["alice"]
            panel.teacher.cancel_button.click()  # not the teacher yet: refused, nothing cancelled
            assert f"run {choices['alice']} is alice's (" in html.unescape(panel.status.value)
            assert len(client.run_on_scheduler(list_runs)["runs"]) == 2
            claim(client)
            panel.teacher.cancel_button.click()
            assert f"asked run {choices['alice']} (alice) to stop" in panel.status.value
            (report,) = reports(alice)
            assert (report["status"], report["failed"]) == ("cancelled", 0)
            gate.touch()
            (report,) = reports(bob)
            assert (report["status"], report["ok"]) == ("completed", 12)
            until(lambda: "0 runs on" in (panel.refresh() or panel.runs.value), "the list to empty")
            assert panel.teacher.cancel_button.disabled
        finally:
            panel.stop()
            kit.cluster.shutdown()


def test_the_teachers_panel_warms_a_configs_env_on_every_worker(tmp_path: Path) -> None:
    with dask_cluster(tmp_path, 2, threads=1) as address:
        panel = ClusterPanel({"env": "remote", "address": address}, refresh_seconds=0.2)
        assert panel.teacher.warm_button.disabled  # nothing to build on yet
        panel.start_button.click()
        session = panel.ready.result(timeout=60) if panel.ready else None
        try:
            assert session is not None and session.client is not None
            panel.teacher.warm_config.value = str(tmp_path / "workshop.yaml")  # a typo'd name, say
            with pytest.raises(kit.ConfigError):
                panel.teacher.warm().result(timeout=60)
            # The button comes back once the outcome is shown: the teacher may try again.
            until(lambda: not panel.teacher.warm_button.disabled, "Warm to come back")
            assert "workshop.yaml" in panel.status.value  # the file named
            panel.teacher.warm_config.value = "kit/examples/quickstart.yaml"
            said = panel.teacher.warm().result(timeout=120)
            until(lambda: not panel.teacher.warm_button.disabled, "Warm to come back")
            assert "built kit-env:" in panel.status.value
            assert said["workers"] == 2 and f"on 2 workers in {said['seconds']:.1f} s" in (
                html.unescape(panel.status.value)
            )
            envs = kit.cluster.class_runs(session.client)["envs"]
            assert list(envs) == [said["env"]]  # built, held by no run: ready for the class
        finally:
            panel.stop()
            kit.cluster.shutdown()
