"""The lock of a run's folder: one writer at a time, and who it is, asked of the kernel."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from kit._base.errors import FolderBusyError, StoreError
from kit._base.files import UnsafeFileError, open_file, refuse_links
from kit.store._rundir import RunDir

#: Attempts at the folder's lock when its holder lets go in between.
LOCK_TRIES = 3


def is_folder(path: Path, identity: tuple[int, int] | None) -> bool:
    """Whether ``path`` is the folder whose (device, inode) is ``identity``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    return (info.st_dev, info.st_ino) == identity


class FolderLock:
    """The lock a run's writer holds on its folder, and the folder it locked.

    The lock is an ``flock`` on the folder's empty ``.lock`` file; who holds
    it is read from the kernel, never from a file anyone could edit.

    Examples
    --------
    >>> import tempfile
    >>> lock = FolderLock(tempfile.mkdtemp())
    >>> lock.busy(), lock.holder()
    (False, None)
    >>> lock.take(); lock.busy(), lock.still_there()
    (True, True)
    >>> lock.release(); lock.busy()
    False
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.file = RunDir(self.path).lock
        self._fh: IO[str] | None = None
        #: (device, inode) of the locked folder: a folder put in its place is not it.
        self.identity: tuple[int, int] | None = None

    def take(self) -> None:
        """Take the lock; refuse if another live process holds it. Held already: nothing to do."""
        if self._fh is not None:
            return
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(
                f"output_dir {self.path} is a file, not a directory; choose another output_dir"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            refuse_links(self.path, RunDir.NAMES)
            fh = open_file(self.file, "a")
        except OSError as exc:
            raise StoreError(
                f"cannot write to output_dir {self.path}: {exc.strerror or exc}; choose an "
                "output_dir you can write to"
            ) from exc
        for _ in range(LOCK_TRIES):
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                # Who holds it is asked of the kernel: the file is empty (nothing written
                # there can fail on a full disk, or be forged). Nobody: it was let go
                # in between (a submit handing over to its driver), so try again.
                holder = self.holder()
                if holder is not None:
                    fh.close()
                    raise FolderBusyError(
                        f"another run is writing to {self.path} (pid {holder}); wait for it "
                        "to end, cancel it, or choose another output_dir"
                    ) from None
        else:
            fh.close()
            raise FolderBusyError(
                f"another run is writing to {self.path}; wait for it to end, cancel it, or "
                "choose another output_dir"
            )
        info = os.stat(self.path)
        self.identity = (info.st_dev, info.st_ino)
        self._fh = fh

    def busy(self) -> bool:
        """Whether some process (this one included) holds the lock now."""
        if self._fh is not None:
            return True
        if not self.file.exists():
            return False
        with open_file(self.file, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
        return False

    def holder(self) -> int | None:
        """Return the pid of the process holding the lock (the kernel says), or None.

        Read from ``/proc/locks`` (Linux), never from a file in the folder,
        which anyone who can write there could edit.
        """
        try:
            with open_file(self.file) as fh:
                info = os.fstat(fh.fileno())
            with open("/proc/locks") as locks:
                table = locks.read().splitlines()
        except (OSError, UnsafeFileError):
            return None
        device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        for line in table:
            fields = line.split()
            # "1: FLOCK  ADVISORY  WRITE 4242 00:2f:1234 0 EOF" (a "->" marks a waiter)
            if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
                return int(fields[4])
        return None

    def release(self) -> None:
        """Let go of the lock taken by :meth:`take`."""
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def still_there(self) -> bool:
        """Whether the folder at ``path`` is still the one locked (True before any lock)."""
        return self.identity is None or is_folder(self.path, self.identity)
