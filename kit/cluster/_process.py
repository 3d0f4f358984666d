"""Whether a process lives, asked of the OS (never by reaping it)."""

from __future__ import annotations


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` runs on this host; a zombie counts as gone.

    psutil reads the process table; polling a ``multiprocessing`` child would
    reap it under whichever thread waits for its exit code.

    Examples
    --------
    >>> import os
    >>> alive(os.getpid()), alive(None)
    (True, False)
    """
    import psutil

    if pid is None:
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
