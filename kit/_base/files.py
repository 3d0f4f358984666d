"""Files of a run directory others may share: never followed through a link.

A run directory may be writable by colleagues. Whoever can write it can plant
a symbolic link where Kit writes (``ledger.jsonl -> ~/.bashrc``) or a file
Kit would unpickle. So every file Kit opens there is opened with
``O_NOFOLLOW`` and must be a regular file, and a file that would run code
when read (a pickle) is read only when the reader asked for it and the file
is the reader's own and nobody else may change it.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from kit._base.errors import UnsafeFileError as UnsafeFileError


def _opener(path: str, flags: int) -> int:
    # O_NONBLOCK: opening a planted FIFO must not hang; it is refused just below.
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError(
                f"{path} is not a regular file; Kit reads and writes only regular files in a "
                "run directory: remove it, or choose another output_dir"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: str | os.PathLike[str], mode: str = "r") -> IO[Any]:
    """``open(path, mode)`` that refuses a symbolic link or anything but a regular file.

    Raises
    ------
    UnsafeFileError
        If ``path`` is a link (its target is never touched) or not a regular file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "victim").write_text("precious")
    8
    >>> (folder / "ledger.jsonl").symlink_to(folder / "victim")
    >>> open_file(folder / "ledger.jsonl", "a")
    Traceback (most recent call last):
    ...
    kit.errors.UnsafeFileError: .../ledger.jsonl is a symbolic link; Kit does not follow ...
    >>> (folder / "victim").read_text()
    'precious'
    """
    try:
        return open(path, mode, opener=_opener)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_error(Path(path)) from None
        raise


def read_text(path: str | os.PathLike[str]) -> str:
    """Return the text of ``path``, opened as :func:`open_file` opens it."""
    with open_file(path) as fh:
        text: str = fh.read()
    return text


def _link_error(path: Path) -> UnsafeFileError:
    return UnsafeFileError(
        f"{path} is a symbolic link; Kit does not follow links in a run directory (one planted "
        "there could make Kit write over another file): remove it, or choose another output_dir"
    )


def refuse_links(folder: Path, names: tuple[str, ...]) -> None:
    """Raise :class:`UnsafeFileError` if any of ``names`` in ``folder`` is a symbolic link."""
    for name in names:
        if (folder / name).is_symlink():
            raise _link_error(folder / name)


def open_private(path: str | os.PathLike[str], mode: str = "rb") -> IO[Any]:
    """:func:`open_file` for a file whose reading may run code: it must be this user's own.

    Raises
    ------
    UnsafeFileError
        If the file opened belongs to another user or others may change it
        (checked on the open file, so it cannot be swapped in between).

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> job = pathlib.Path(tempfile.mkdtemp()) / "job.pkl"
    >>> _ = job.write_bytes(b"")
    >>> job.chmod(0o666)
    >>> open_private(job)
    Traceback (most recent call last):
    ...
    kit.errors.UnsafeFileError: .../job.pkl may be changed by other users (mode 666)
    """
    fh = open_file(path, mode)
    info = os.fstat(fh.fileno())
    problem = None
    if info.st_uid != os.getuid():
        problem = f"{path} belongs to user id {info.st_uid}, not to you ({os.getuid()})"
    elif info.st_mode & 0o022:
        problem = f"{path} may be changed by other users (mode {info.st_mode & 0o777:o})"
    if problem is not None:
        fh.close()
        raise UnsafeFileError(problem)
    return fh


def write_json(path: Path, data: Mapping[str, Any], private: bool = False) -> None:
    """Write ``data`` to ``path`` as JSON, atomically, into a folder that must exist.

    A run's folder deleted mid-run is not made again for one file.
    """
    from kit._base.atomic import atomic_file

    with atomic_file(path, private=private, parents=False) as fh:
        json.dump(data, fh, indent=1, default=repr)


def read_json(path: Path) -> dict[str, Any] | None:
    """Return the JSON object in ``path``; None if missing, garbled, a link or no object.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "status.json"
    >>> read_json(path) is None
    True
    >>> write_json(path, {"done": 3})
    >>> read_json(path)
    {'done': 3}
    """
    try:
        with open_file(path) as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, UnsafeFileError):
        return None
    return data if isinstance(data, dict) else None


def file_digest(path: str | os.PathLike[str]) -> str:
    """Return the sha256 of a file's bytes, read once per process while it is unchanged.

    Unchanged: the same size, modification time and inode (a file written
    anew gets another).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "model.bin"
    >>> _ = path.write_bytes(b"weights")
    >>> file_digest(path)[:12]
    '9a129038d9a0'
    """
    info = os.stat(path)
    return _digest_of(str(path), info.st_mtime_ns, info.st_size, info.st_ino)


@functools.lru_cache(maxsize=65536)
def _digest_of(path: str, mtime: int, size: int, inode: int) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open a data file (a link followed) for reading bytes; refuse what is not a regular file.

    Opened without waiting: a FIFO (or one swapped in since a check) would
    block a plain open until some writer came. For the files a config or a
    manifest names, which may be links into a corpus; a run directory's own
    files are opened with :func:`open_file`, which follows no link.

    Raises
    ------
    OSError
        ``EINVAL`` if ``path`` is a FIFO, a device or a folder.

    Examples
    --------
    >>> with open_regular("/dev/null") as fh:
    ...     pass
    Traceback (most recent call last):
    ...
    OSError: [Errno 22] not a regular file: '/dev/null'
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
