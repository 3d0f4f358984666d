"""The class board: attendees' checks reach the class cluster's scheduler as they run, and
`kit cluster board` draws every attendee's exercise, checks and runs from there alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kit
from kit.cluster._shared import list_runs
from tests.cluster.test_teacher import kit as kit_command
from tests.servers import dask_cluster
from tests.widgets.test_workshop_checks import attempt, solution

InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell


def test_an_attendees_checks_reach_the_board_without_asking_the_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KIT_WORKSHOP_SOLUTIONS", raising=False)
    monkeypatch.setenv("JUPYTERHUB_USER", "dora")
    with dask_cluster(tmp_path, 1, threads=2) as address:
        monkeypatch.setenv("KIT_CLASS_CLUSTER", address)
        shell: Any = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "kit.widgets.workshop")
        shell.run_line_magic("checks", "kit.widgets.workshop_checks")
        setup = (
            "import kit\nfrom kit import EnvironmentProvider, Runner\n"
            "from kit.widgets.workshop import cluster as class_cluster\n"
            "cfg = kit.load_config({'words': ['the', 'cat'],"
            " 'sentences': ['the cat', 'a dog', 'a cat']})\n"
            "cluster = class_cluster()\n"
        )
        try:
            assert shell.run_cell(setup).success
            assert attempt(shell, 1, solution(1)) == "passed"
            wrong = solution(2).replace(
                "done = [r for r in records if r is not None]", "done = records"
            )
            assert attempt(shell, 2, wrong).startswith("Exercise 2 is not right yet")
            session = kit.cluster.get_session({"env": "remote", "address": address})
            notes = session.client.run_on_scheduler(list_runs)["attendees"]
            assert notes["dora"]["exercise"] == "2"
            assert notes["dora"]["checks"]["1"] == "passed"
            assert notes["dora"]["checks"]["2"].startswith("summarize raised TypeError")
            board = kit_command("cluster", "board", address, "--once")
            assert board.returncode == 0, board.stderr
            lines = board.stdout.splitlines()
            assert lines[0].startswith("Class board: 1 attendee, 0 runs on 2 worker threads")
            assert lines[1].split()[:3] == ["ATTENDEE", "EXERCISE", "CHECKS"]
            row = lines[2].split(maxsplit=2)
            assert row[:2] == ["dora", "2"] and row[2].startswith("1 ok, 2 no: summarize raised")
            assert "solution" not in board.stdout and "done = " not in board.stdout
        finally:
            shell.user_ns["_kit_workshop"].finished.clear()
            shell.user_ns["_kit_workshop"].checks.clear()
            kit.cluster.shutdown()


def test_a_bad_class_note_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    from distributed import Client

    from kit.cluster._shared import ClusterLedger, note_exercise

    with dask_cluster(tmp_path, 1, threads=1) as address, Client(address) as client:
        client.register_plugin(ClusterLedger())
        for args in (("", "1", "passed"), ("eve", None, "passed"), ("eve", "1", "x" * 201)):
            with pytest.raises(TypeError, match="a class note needs"):
                client.run_on_scheduler(note_exercise, *args)
        assert client.run_on_scheduler(list_runs)["attendees"] == {}
