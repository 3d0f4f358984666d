"""The class board: every attendee, their exercise and checks, their runs, the envs.

Drawn from one listing of the scheduler's ledger (:func:`~kit.cluster._teacher.class_runs`):
the run book's seats, the attendees' check notes (sent by the workshop's
checks, :func:`~kit.widgets.workshop.tell_class`), the envs with their
owners. Nothing asks a notebook. ``kit cluster board`` draws it in a
terminal, again every second.
"""

from __future__ import annotations

import time
from typing import Any

from kit.cluster._teacher import env_rows

#: A run that has not reported for this many seconds is shown as stuck (runs report
#: several times a second).
STUCK_AFTER = 10.0
#: The board's columns.
BOARD_COLUMNS = ("attendee", "exercise", "checks", "runs", "state")


def board_rows(listing: dict[str, Any], now: float | None = None) -> list[dict[str, str]]:
    """Return one row per attendee (with a run or a check), by name.

    Examples
    --------
    >>> seat = {"run_id": "1a2b3c", "user": "alice", "host": "lab", "runner": "Decode",
    ...         "env": "kit-env:m.P:1-2", "total": 200, "done": 50, "failed": 2,
    ...         "chunks_out": 4, "share": 2, "started": 0.0, "seen": 5.0, "cancel_by": None,
    ...         "first_error": "item 7: ValueError: empty transcript"}
    >>> notes = {"alice": {"exercise": "2", "checks": {"1": "passed", "2": "summarize returned 0"},
    ...                    "seen": 3.0},
    ...          "bob": {"exercise": "1", "checks": {"1": "passed"}, "seen": 4.0}}
    >>> listing = {"threads": 4, "runs": [seat], "attendees": notes, "envs": {}}
    >>> for row in board_rows(listing, now=30.0):
    ...     print(" | ".join(row.values()))  # doctest: +NORMALIZE_WHITESPACE
    alice | 2 | 1 ok, 2 no: summarize returned 0 | 50/200 on 2 slots
          | 2 failed, first item 7: ValueError: empty transcript; stuck 25s
    bob | 1 | 1 ok |  |
    """
    now = time.time() if now is None else now
    notes: dict[str, Any] = listing.get("attendees") or {}
    runs: dict[str, list[dict[str, Any]]] = {}
    for seat in listing["runs"]:
        runs.setdefault(seat["user"], []).append(seat)
    rows = []
    for user in sorted({*notes, *runs}):
        note = notes.get(user) or {}
        checks = note.get("checks") or {}
        theirs = sorted(runs.get(user, []), key=lambda s: s["started"])
        state = []
        failed = sum(s["failed"] for s in theirs)
        if failed:
            first = next((s["first_error"] for s in theirs if s.get("first_error")), "")
            state.append(f"{failed} failed, first {first}" if first else f"{failed} failed")
        quiet = [now - s.get("seen", now) for s in theirs]
        if quiet and max(quiet) >= STUCK_AFTER:
            state.append(f"stuck {max(quiet):.0f}s")
        if any(s.get("cancel_by") for s in theirs):
            state.append("cancelling")
        rows.append(
            {
                "attendee": user,
                "exercise": str(note.get("exercise", "")),
                "checks": ", ".join(
                    f"{n} ok" if said == "passed" else f"{n} no: {said}"
                    for n, said in sorted(checks.items())
                ),
                "runs": ", ".join(
                    f"{s['done']}/{s['total']} on {s['share']} slots" for s in theirs
                ),
                "state": "; ".join(state),
            }
        )
    return rows


def note_check(client: Any, exercise: str, outcome: str) -> None:
    """Put this attendee's check ``outcome`` of ``exercise`` on the class cluster's board.

    ``outcome`` is ``"passed"`` or the first line of what the check found
    wrong (never the check's code). The attendee is ``JUPYTERHUB_USER``, else
    the login name. The workshop's checks call it when a class cluster is set.

    Examples
    --------
    >>> from distributed import Client, LocalCluster
    >>> from kit.cluster import class_runs
    >>> cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    >>> client = Client(cluster)
    >>> note_check(client, "1", "passed")
    >>> [seen["checks"] for seen in class_runs(client)["attendees"].values()]
    [{'1': 'passed'}]
    >>> client.close(); cluster.close()
    """
    from kit.cluster._seats import who
    from kit.cluster._shared import ClusterLedger, note_exercise

    client.register_plugin(ClusterLedger())  # kept if a Kit session registered it
    client.run_on_scheduler(note_exercise, who(), exercise, outcome)


def board_text(listing: dict[str, Any], now: float | None = None, width: int = 120) -> str:
    """Draw the board as ``kit cluster board`` prints it (each row cut to ``width``).

    Examples
    --------
    >>> print(board_text({"threads": 4, "runs": [], "attendees": {}, "envs": {}}, now=0.0))
    Class board: 0 attendees, 0 runs on 4 worker threads
    (nobody has run anything yet)
    0 envs on the workers
    """
    rows = board_rows(listing, now)
    head = (
        f"Class board: {len(rows)} attendee{'s' if len(rows) != 1 else ''}, "
        f"{len(listing['runs'])} run{'s' if len(listing['runs']) != 1 else ''} on "
        f"{listing['threads']} worker threads"
    )
    lines = [head]
    if rows:
        table = [[c.upper() for c in BOARD_COLUMNS], *([r[c] for c in BOARD_COLUMNS] for r in rows)]
        widths = [max(len(row[i]) for row in table) for i in range(len(BOARD_COLUMNS))]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()[:width]
            for row in table
        ]
    else:
        lines.append("(nobody has run anything yet)")
    envs = env_rows(listing)
    lines.append(f"{len(envs)} env{'s' if len(envs) != 1 else ''} on the workers")
    lines += [f"{name}  {held}"[:width] for name, held in envs]
    return "\n".join(lines)
