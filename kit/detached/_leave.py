"""Ending a Kit process when its run is over, even if ``forward`` left threads running.

Python waits for every non-daemon thread before it exits. A ``forward`` that
starts one and never ends it (a library's background poller, a forgotten
``threading.Thread``) would keep ``kit run`` or a detached run's driver
alive after the run ended, its results stored, with nothing left to do.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

#: Thread pools the interpreter itself tells to stop at exit: not left behind.
_STOPPED_AT_EXIT = "concurrent.futures.thread"


def left_running() -> list[threading.Thread]:
    """Return the non-daemon threads that would keep this process from exiting.

    Examples
    --------
    >>> left_running()
    []
    >>> import threading
    >>> release = threading.Event()
    >>> poller = threading.Thread(target=release.wait, name="poller")
    >>> poller.start()
    >>> [t.name for t in left_running()]
    ['poller']
    >>> release.set(); poller.join()
    """
    return [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread()
        and not thread.daemon
        and thread.is_alive()
        and getattr(getattr(thread, "_target", None), "__module__", None) != _STOPPED_AT_EXIT
    ]


def leave(code: int) -> NoReturn:
    """Exit with ``code``; threads the run left running do not keep the process.

    Without such threads this is ``sys.exit(code)``. With them, it says which
    on stderr, runs the exit handlers as a normal exit would (they run after
    the wait for threads, which is what is skipped) and ends the process.
    """
    stray = left_running()
    if not stray:
        sys.exit(code)
    names = ", ".join(sorted(repr(thread.name) for thread in stray))
    print(
        f"kit: the run is over; not waiting for {len(stray)} thread(s) it left running "
        f"({names}). A forward that starts threads should end them, or make them daemon "
        "threads (threading.Thread(..., daemon=True)).",
        file=sys.stderr,
    )
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
