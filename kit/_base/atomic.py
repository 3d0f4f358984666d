"""Files written whole or not at all: a temporary file renamed into place."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def current_umask() -> int:
    """Return the process's umask without changing it.

    ``os.umask`` can only be read by setting it, which for a moment would
    give files that another thread creates the wrong mode; Linux shows it in
    ``/proc/self/status``.

    Examples
    --------
    >>> 0 <= current_umask() <= 0o777
    True
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename or a new file in folder ``path`` survive a power cut."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(
    path: str | os.PathLike[str],
    mode: str = "w",
    *,
    durable: bool | str = False,
    private: bool = False,
    parents: bool = True,
) -> Iterator[IO[Any]]:
    """Write ``path`` through a temporary file renamed into place at the end.

    The parent folder is created, unless ``parents`` is false (a run's
    folder deleted mid-run must not come back holding one file). A crash
    or an exception leaves the old file (or none) and no temporary file
    behind. The file gets the mode a
    plain ``open`` would (0666 less the umask), or 0600 when ``private``.
    With ``durable``, the data and the rename reach the disk before this
    returns (``fsync`` of the file and of its folder); with ``durable="data"``
    only the data does, for a caller that syncs the folder once for many files.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "sub" / "out.txt"
    >>> with atomic_file(target) as fh:
    ...     _ = fh.write("done")
    >>> target.read_text(), [p.name for p in target.parent.iterdir()]
    ('done', ['out.txt'])
    >>> oct(target.stat().st_mode & 0o777) == oct(0o666 & ~current_umask())
    True
    """
    target = Path(path)
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        # mkstemp makes 0600 files: a report a colleague cannot open.
        os.fchmod(fd, 0o600 if private else 0o666 & ~current_umask())
        with os.fdopen(fd, mode) as fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
        if durable is True:
            fsync_dir(target.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
