"""Following a run's ``events.jsonl`` as another process writes it: a live event stream.

A detached run's driver stores every event it emits; a view in another
process (a notebook, after ``kit.attach``) reads them back as they are
written, so its dashboard draws the run live and ends on the same picture
as the driver's own would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from kit._base.files import open_file
from kit.events import EventStream, event_from_line

#: Seconds between two looks at the file while nothing new is there.
POLL = 0.25


def follow_events(path: Path, live: Callable[[], bool], poll: float = POLL) -> EventStream:
    """Return a stream of the events in ``path``: those there now, then each one appended.

    A thread reads the file until ``live()`` says its writer has gone and
    all it wrote was read. A ``RunFinished`` alone does not end the reading:
    a resumed run's file holds its earlier sessions first. Only whole
    lines are read: a line being written is read once its newline is there,
    and one that never gets it (a writer killed mid-line) is skipped.

    Examples
    --------
    >>> import tempfile
    >>> from kit.events import EventLog, RunFinished, RunStarted
    >>> path = Path(tempfile.mkdtemp()) / "events.jsonl"
    >>> log = EventLog(path)  # what a run with an output_dir writes
    >>> log(RunStarted("r1", total=2, resumed=0, workers=1))
    >>> log(RunFinished("r1", "completed", 2, 0, 2, 0.1))
    >>> stream = follow_events(path, live=lambda: False)
    >>> stream.join(5)
    >>> [type(e).__name__ for e in stream.history()]
    ['RunStarted', 'RunFinished']
    """
    return _FollowedStream(path, live, poll)


class _FollowedStream(EventStream):
    """An :class:`EventStream` fed from a file; :meth:`join` waits until the file is read out."""

    def __init__(self, path: Path, live: Callable[[], bool], poll: float) -> None:
        super().__init__()
        self._thread = threading.Thread(
            target=_follow, args=(path, self, live, poll), name="kit-follow-events", daemon=True
        )
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the run's end was read (or its writer went away)."""
        self._thread.join(timeout)


def _follow(path: Path, stream: EventStream, live: Callable[[], bool], poll: float) -> None:
    offset = 0
    pending = b""
    while True:
        writer_alive = live()  # asked before reading, so nothing written before it ends is missed
        chunk = b""
        if path.is_file():
            if path.stat().st_size < offset:
                offset, pending = 0, b""  # a new run started over the file: read it anew
            with open_file(path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
            offset += len(chunk)
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            event = event_from_line(line)
            if event is None:
                continue  # a torn line, as read_events skips it
            stream.emit(event)
        # Only the writer's end ends the reading, not a RunFinished: a resumed run's file
        # holds its earlier sessions first. Asked before this read, it got everything.
        if not writer_alive:
            return
        time.sleep(poll)
