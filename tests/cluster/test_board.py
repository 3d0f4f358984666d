"""The class board in a terminal: what goes wrong in an attendee's run reaches it as it runs."""

from __future__ import annotations

import re
from pathlib import Path

from distributed import Client

from kit.cluster import board_rows
from kit.cluster._shared import list_runs
from tests.class_client import attendee, reports, until
from tests.cluster.test_teacher import gated, kit


def test_a_runs_failures_reach_the_board_with_the_first_error_while_it_runs(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    alice = attendee(scheduler, gated(tmp_path / "a", gate, fail_on=[3, 5]), user="alice")
    until(
        lambda: [s["failed"] for s in watcher.run_on_scheduler(list_runs)["runs"]] == [2],
        "alice's run to report its two failed items",
    )
    [row] = board_rows(watcher.run_on_scheduler(list_runs))
    # Whichever of its chunks came back first: the teacher sees why, not only how many.
    assert re.match(r"2 failed, first item ([35]): ValueError: item \1 is broken", row["state"])
    board = kit("cluster", "board", scheduler, "--once")  # as wide as the terminal: cut there
    assert board.returncode == 0, board.stderr
    assert "2 failed, first item " in board.stdout, board.stdout
    gate.touch()
    [report] = reports(alice)
    assert (report["ok"], report["failed"]) == (10, 2)
