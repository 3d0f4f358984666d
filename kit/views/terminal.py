"""A progress line in the terminal: done/total, rate, ETA, failures."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from kit._base.format import duration, printable
from kit.events import ChunkFinished, Event, RunFinished, RunStarted


class TerminalProgress:
    """Draw a run's progress on a terminal (redrawn in place) or a log (a line every few seconds).

    Subscribe it to a run's events: ``runner.run(indices, on_event=TerminalProgress())``.

    Examples
    --------
    >>> import io
    >>> from kit.events import RunStarted, ChunkFinished, RunFinished
    >>> out = io.StringIO()
    >>> view = TerminalProgress(out, width=10)
    >>> view(RunStarted("r", total=4, resumed=0, workers=2))
    >>> view(ChunkFinished("r", 0, 2, 1, "0", 0.1, 1.0, 2, 1, 4))
    >>> view(RunFinished("r", "completed", 4, 1, 4, 2.0))
    >>> print(out.getvalue().splitlines()[-1])
    [##########] 4/4 100% | 2.0 items/s | 1 failed | completed in 2.0s

    A run that ends before it starts (its config refused, its env not
    built) draws no bar: what ended it is its caller's to say.

    >>> out = io.StringIO()
    >>> TerminalProgress(out)(RunFinished("r", "error", 0, 0, 4, 0.0))
    >>> out.getvalue()
    ''
    """

    def __init__(self, stream: TextIO | None = None, width: int = 30, every: float = 0.1) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = every if self.tty else 5.0
        self._last = 0.0
        self._resumed = 0
        self._started = False

    def _bar(self, done: int, total: int) -> str:
        filled = self.width * done // total if total else self.width
        percent = 100 * done // total if total else 100
        return f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {percent}%"

    def _write(self, line: str, final: bool = False) -> None:
        line = printable(line)  # failures and summaries come from records and errors
        if self.tty:
            self.stream.write("\r" + line + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def __call__(self, event: Event) -> None:
        """Draw ``event``."""
        if isinstance(event, RunStarted):
            self._started = True
            self._resumed = event.resumed
            note = f", {event.resumed} already done" if event.resumed else ""
            self._write(f"{event.total} items on {event.workers} worker(s){note}", final=True)
            if event.dashboard:
                self._write(f"dashboard: {event.dashboard}", final=True)
        elif isinstance(event, ChunkFinished):
            now = time.monotonic()
            if now - self._last < self.every and event.done < event.total:
                return
            self._last = now
            ran = event.done - self._resumed
            rate = ran / event.elapsed if event.elapsed > 0 else 0.0
            left = event.total - event.done
            eta = duration(left / rate, compact=True) if rate > 0 else "?"
            failed = f" | {event.failed_total} failed" if event.failed_total else ""
            self._write(
                f"{self._bar(event.done, event.total)} | {rate:.1f} items/s | ETA {eta}{failed}"
            )
        elif isinstance(event, RunFinished) and self._started:
            ran = event.done - self._resumed
            rate = ran / event.elapsed if event.elapsed > 0 else 0.0
            failed = f" | {event.failed} failed" if event.failed else ""
            self._write(
                f"{self._bar(event.done, event.total)} | {rate:.1f} items/s{failed} | "
                f"{event.status} in {duration(event.elapsed, compact=True)}",
                final=True,
            )
