"""Turn ``os._exit`` called by ``forward`` into an exception, only in the thread running it.

``os._exit`` cannot be caught: in a notebook it ends the kernel, on a worker
it ends the worker process, and with it every chunk that worker holds. While
:func:`exit_guard` is active, ``os._exit`` called *from the guarded thread of
this process* raises :class:`ProcessExitCalled` instead, which Kit records as
an item error. Every other caller (another thread, a forked child, whose pid
differs) gets the real ``os._exit``. Code that kept its own reference
(``from os import _exit``) before the guard is not covered; a process killed
by a signal never is: that is what the dispatcher's isolation of killing
items is for.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import NoReturn

_REAL_EXIT = os._exit
_LOCK = threading.Lock()
#: (pid, thread ident) of the threads running ``forward`` under a guard, with a depth.
_GUARDED: dict[tuple[int, int], int] = {}


class ProcessExitCalled(BaseException):
    """``forward`` called ``os._exit(code)`` under :func:`exit_guard`.

    A ``BaseException``, like ``SystemExit``, so that an ``except Exception``
    in user code does not swallow what was meant to end the process.
    """

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _guarded_exit(status: int) -> NoReturn:
    if (os.getpid(), threading.get_ident()) in _GUARDED:
        raise ProcessExitCalled(status)
    _REAL_EXIT(status)


@contextlib.contextmanager
def exit_guard() -> Iterator[None]:
    """Within the block, ``os._exit`` in this thread raises :class:`ProcessExitCalled`.

    Examples
    --------
    >>> with exit_guard():
    ...     try:
    ...         os._exit(3)
    ...     except ProcessExitCalled as exc:
    ...         print("caught", exc.code)
    caught 3
    >>> os._exit is _REAL_EXIT
    True
    """
    key = (os.getpid(), threading.get_ident())
    with _LOCK:
        _GUARDED[key] = _GUARDED.get(key, 0) + 1
        os._exit = _guarded_exit
    try:
        yield
    finally:
        with _LOCK:
            _GUARDED[key] -= 1
            if not _GUARDED[key]:
                del _GUARDED[key]
            if not _GUARDED:
                os._exit = _REAL_EXIT
