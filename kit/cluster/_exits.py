"""How a worker process ended, as its nanny saw it: for an env build that died with it.

A worker process that dies while building an env is started again by its
nanny, and the env's next build there finds the mark the dead one left
(:func:`~kit.cluster._plugin.build_marker`). Only the nanny knows how the
process ended: its exit code or signal, and whether the nanny itself
stopped it for passing the memory limit. :class:`ExitRecorder`, a nanny
plugin, writes that down beside the build marks, so the error names a crash
as a crash and blames memory only when the nanny says the limit was hit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import NannyPlugin

#: The recorder's name among the nannies' plugins.
EXITS = "kit-exits"


class ExitRecorder(NannyPlugin):
    """Write down how this nanny's worker process ends, each time it does."""

    idempotent = True
    name = EXITS

    def setup(self, nanny: Any) -> None:
        folder = Path(nanny.local_directory) / "kit-env-builds"
        manager = getattr(nanny, "memory_manager", None)
        seen = {"terminated": getattr(manager, "_last_terminated_pid", None)}
        original = nanny._on_worker_exit_sync

        def on_exit(exitcode: int) -> None:
            with contextlib.suppress(Exception):  # never in the way of the nanny's restart
                # The nanny notes the pid it stopped for memory just before it stops it.
                terminated = getattr(manager, "_last_terminated_pid", None)
                record = {
                    "exitcode": exitcode,
                    "memory": terminated is not None and terminated != seen["terminated"],
                    "limit": getattr(manager, "memory_limit", None),
                }
                seen["terminated"] = terminated
                folder.mkdir(mode=0o700, exist_ok=True)
                exit_record(folder, nanny.address).write_text(json.dumps(record))
            original(exitcode)

        # New worker processes get it from the nanny; the one running now, directly.
        nanny._on_worker_exit_sync = on_exit
        if getattr(nanny, "process", None) is not None:
            nanny.process.on_exit = on_exit


def exit_record(folder: Path, nanny_address: str) -> Path:
    """Return the file where the nanny at ``nanny_address`` notes its worker's last end."""
    return folder / f"exit-{hashlib.sha256(nanny_address.encode()).hexdigest()[:24]}"


def last_exit(worker: Any) -> dict[str, Any] | None:
    """Return how ``worker``'s previous process ended, as its nanny noted it (None: unknown)."""
    nanny = getattr(worker, "nanny", None)
    if not nanny:
        return None
    path = exit_record(Path(worker.local_directory).parent / "kit-env-builds", nanny)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("exitcode"), int) else None


def how_it_ended(record: dict[str, Any] | None) -> tuple[str, bool]:
    """Say how a worker process ended; and whether memory was the cause, by the nanny's word.

    Examples
    --------
    >>> how_it_ended({"exitcode": 3, "memory": False})
    ('exited with code 3', False)
    >>> how_it_ended({"exitcode": -11, "memory": False})[0]
    'was killed by signal 11 (SIGSEGV: a crash in compiled code)'
    >>> how_it_ended({"exitcode": -15, "memory": True, "limit": 300_000_000})
    ('was stopped by its nanny for passing its memory limit of 286 MiB', True)
    >>> how_it_ended(None)
    ('ended (its nanny left no record of how: see the worker log)', False)
    """
    if record is None:
        return "ended (its nanny left no record of how: see the worker log)", False
    if record.get("memory"):
        limit = record.get("limit")
        said = f" of {limit / 2**20:,.0f} MiB" if isinstance(limit, int | float) and limit else ""
        return f"was stopped by its nanny for passing its memory limit{said}", True
    code = int(record["exitcode"])
    if code >= 0:
        return f"exited with code {code}", False
    number = -code
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"was killed by signal {number}", False
    why = {
        "SIGSEGV": "a crash in compiled code",
        "SIGBUS": "a crash in compiled code",
        "SIGABRT": "the process aborted itself",
        "SIGKILL": "the machine's out-of-memory killer sends it when memory runs out; so can "
        "a person or a job scheduler",
    }.get(name)
    return f"was killed by signal {number} ({name}{': ' + why if why else ''})", False
