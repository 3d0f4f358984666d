"""The rule of Kit's live views: only the kernel's own thread touches a widget or a bokeh document.

Runs report from other threads (the engine's driver, Dask's callbacks), but
the kernel serialises widgets and bokeh documents on its own thread, when a
front end asks for their state or sends an event. A change made from another
thread at that moment corrupts what is sent ("Set changed size during
iteration", "can't resolve reference"). So views fold events into plain
state wherever they arrive and apply them to widgets here, on the kernel's
event loop.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any


def kernel_loop() -> Any:
    """Return the running IPython kernel's event loop (a tornado IOLoop), or None outside one."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(getattr(shell, "kernel", None), "io_loop", None)


def on_kernel_thread(action: Callable[[], None]) -> None:
    """Run ``action`` on the kernel's thread: now if this is it, else soon, on its event loop.

    Outside a kernel (a script, a doctest) nothing else reads the widgets, so
    ``action`` runs at once on the caller's thread.

    Examples
    --------
    >>> seen = []
    >>> on_kernel_thread(lambda: seen.append(1))
    >>> seen
    [1]
    """
    loop = kernel_loop()
    if loop is None or threading.current_thread() is threading.main_thread():
        action()
    else:
        loop.add_callback(action)


class Painter:
    """Call ``draw`` on the kernel's thread after changes, at most once per ``interval`` seconds.

    :meth:`wake` may be called from any thread, as often as events come; the
    draws it leads to are coalesced. Called on the kernel's thread itself (an
    inline run: the cell holds the thread, so the loop waits for the cell),
    it draws at once when ``interval`` has passed or ``urgent()`` says so
    (the run has ended, say), else leaves one draw for when the cell ends.

    Examples
    --------
    >>> drawn = []
    >>> painter = Painter(lambda: drawn.append(1), interval=60.0)
    >>> painter.wake(); painter.wake()  # outside a kernel: the first draws, the second waits
    >>> drawn
    [1]
    """

    def __init__(
        self,
        draw: Callable[[], object],
        interval: float,
        urgent: Callable[[], bool] = lambda: False,
    ) -> None:
        self._draw = draw
        self.interval = interval
        self._urgent = urgent
        self._lock = threading.Lock()
        self._pending = False
        self._last = -math.inf

    def wake(self) -> None:
        """Say something changed (from any thread)."""
        loop = kernel_loop()
        on_kernel = threading.current_thread() is threading.main_thread()
        if loop is None or on_kernel:
            if time.monotonic() - self._last >= self.interval or self._urgent():
                self.paint()
            elif loop is not None:
                self._schedule(loop)
            return
        self._schedule(loop)

    def _schedule(self, loop: Any) -> None:
        with self._lock:
            if self._pending:
                return
            self._pending = True
        loop.add_callback(self._later, loop)

    def _later(self, loop: Any) -> None:
        # On the loop now (call_later is not thread-safe, add_callback is).
        delay = 0.0 if self._urgent() else self._last + self.interval - time.monotonic()
        loop.call_later(max(0.0, delay), self.paint)

    def paint(self) -> None:
        """Draw now (call it on the kernel's thread)."""
        with self._lock:
            self._pending = False
        self._last = time.monotonic()
        self._draw()
