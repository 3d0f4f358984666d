"""Files written whole or not at all: a temporary file renamed into place."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kit._base.errors import UnsafeFileError

#: What a path is, by its mode, for the error that refuses to rename over it.
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


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


def _streamed(target: Path) -> bool:
    """Whether a path someone named is to be written into, as a shell's ``>`` would.

    A device, a FIFO or a link that leads to one or to a file
    (``/dev/null``; ``/dev/stdout``, a link into ``/proc``, whatever stdout
    is): renaming over it would replace it. A folder is not.
    """
    try:
        if stat.S_ISREG(os.lstat(target).st_mode):
            return False
        mode = os.stat(target).st_mode  # links followed
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _standard_stream(target: Path) -> Any:
    """Return this process's stdout or stderr if ``target`` is the file it writes to."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if os.path.samestat(os.stat(target), os.fstat(stream.fileno())):
                stream.flush()
                return stream
        except (OSError, ValueError, AttributeError):  # closed, or no file (a notebook's)
            continue
    return None


def _refuse_unless_regular(target: Path, named: bool) -> None:
    """Raise :class:`UnsafeFileError` if ``target`` exists and a rename would replace a non-file."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    if stat.S_ISDIR(mode):
        fix = f"give the path of a file, such as {target / 'out.json'}"
    else:
        fix = "remove it, or give the path of a regular file (or of none yet)"
    hint = "; a device, a FIFO or a link is written into (/dev/null, /dev/stdout)" if named else ""
    raise UnsafeFileError(
        f"{target} is {kind}; Kit writes a file whole, through a new file renamed onto its "
        f"path, which would replace it: {fix}{hint}"
    )


@contextlib.contextmanager
def atomic_file(
    path: str | os.PathLike[str],
    mode: str = "w",
    *,
    durable: bool | str = False,
    private: bool = False,
    parents: bool = True,
    named: bool = False,
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

    Nothing but a regular file is ever renamed over: a path that is a link,
    a folder, a device or a FIFO is refused (:class:`UnsafeFileError`),
    since the rename would replace it (a ``/dev/null`` replaced by a file
    breaks every later program that writes there). A path the user
    ``named`` (``--json FILE``) may be a character device, a FIFO or a
    link (``/dev/null``, ``/dev/stdout``): it is written straight into, as
    a shell's ``>`` would, not renamed over.

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
    >>> with atomic_file("/dev/null", named=True) as fh:
    ...     _ = fh.write("discarded")
    >>> with atomic_file("/dev/null") as fh:
    ...     pass
    Traceback (most recent call last):
    ...
    kit.errors.UnsafeFileError: /dev/null is a character device; Kit writes a file whole, ...
    """
    target = Path(path)
    if named and _streamed(target):
        stream = _standard_stream(target)
        if stream is not None:  # /dev/stdout: after what was printed there, not over it
            yield stream.buffer if "b" in mode else stream
            stream.flush()
            return
        with open(target, mode) as fh:
            yield fh
        return
    _refuse_unless_regular(target, named)
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
