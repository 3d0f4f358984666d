"""Every process the suite started ends with it, an interrupted suite's too (Ctrl-C).

Tests start servers, browsers, kernels, clusters and detached drivers: some
in sessions of their own, which a terminal's Ctrl-C never reaches, some that
leave their parent on purpose (a detached driver outlives its kernel). Each
inherits :data:`MARK`, set by the suite's first process to its own pid; when
that process ends, whatever still carries its mark, and whatever such a
process or the suite itself started, is ended: SIGTERM, then SIGKILL. The
hooks are the conftest's; ``-p tests.reaper`` gives them to another session.
"""

from __future__ import annotations

import contextlib
import os
import sys

import psutil
import pytest

#: The environment variable every process the suite starts inherits: the suite's pid.
MARK = "KIT_TEST_SUITE"

#: Seconds a process has to end on SIGTERM before it is killed.
GRACE = 5.0


def left_running(mark: str) -> list[psutil.Process]:
    """Return the processes the suite marked ``mark`` started that still run, and theirs."""
    me = psutil.Process()
    mine = {me.pid, *(p.pid for p in me.parents())}
    found: dict[int, psutil.Process] = {p.pid: p for p in me.children(recursive=True)}
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.pid not in mine and process.environ().get(MARK) == mark:
                found[process.pid] = process
                found.update((p.pid, p) for p in process.children(recursive=True))
    alive = []
    for pid, process in found.items():
        with contextlib.suppress(psutil.Error):
            ended = process.status() == psutil.STATUS_ZOMBIE
            if pid not in mine and not ended and not _own_helper(process, me):
                alive.append(process)
    return alive


def _own_helper(process: psutil.Process, me: psutil.Process) -> bool:
    """Whether ``process`` is this process's multiprocessing server, which ends as it exits."""
    helpers = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")
    command = " ".join(process.cmdline())
    return process.ppid() == me.pid and any(helper in command for helper in helpers)


def end(processes: list[psutil.Process]) -> None:
    """SIGTERM each of ``processes``; SIGKILL those still running after :data:`GRACE`."""
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _, still = psutil.wait_procs(processes, timeout=GRACE)
    for process in still:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(still, timeout=GRACE)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        os.environ[MARK] = str(os.getpid())


def pytest_unconfigure(config: pytest.Config) -> None:
    # The suite's first process alone: an xdist worker ending would end the others' work.
    if os.environ.get("PYTEST_XDIST_WORKER") is not None or MARK not in os.environ:
        return
    left = left_running(os.environ[MARK])
    if left:
        names = sorted({name for p in left for name in _name(p)})
        print(f"\nthe suite ended {len(left)} processes it left running: {', '.join(names)}",
              file=sys.stderr)  # fmt: skip
        for process in left:  # which, so that a leak can be traced to its test
            with contextlib.suppress(psutil.Error):
                print(f"  {process.pid}: {' '.join(process.cmdline())[:160]}", file=sys.stderr)
        end(left)


def _name(process: psutil.Process) -> list[str]:
    with contextlib.suppress(psutil.Error):
        return [process.name()]
    return []
