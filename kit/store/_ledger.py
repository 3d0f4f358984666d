"""The ledger of a run's folder: which chunk files are committed, and their commit.

A chunk counts as stored once ``ledger.jsonl`` names it with its size and
sha256; only files named there, unchanged, are ever read back.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kit._base.atomic import fsync_dir
from kit._base.errors import StoreWarning
from kit._base.files import open_file
from kit.store._chunk_result import ChunkResult
from kit.store._formats import RecordWriter
from kit.store._rundir import RunDir


def digest(path: Path) -> str:
    """Return the sha256 of the file at ``path``, read in blocks."""
    sha = hashlib.sha256()
    with open_file(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def entry_problem(path: Path, entry: Mapping[str, Any]) -> str | None:
    """Why ``path`` is not the file the ledger ``entry`` recorded, or None."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "is missing"
    if size != entry.get("size"):
        return f"has {size} bytes where {entry.get('size')} were committed (truncated or altered)"
    if digest(path) != entry.get("sha256"):
        return "differs from what was committed (its digest changed)"
    return None


class Ledger:
    """Read and append a run folder's ``ledger.jsonl``, and read back what it names.

    Examples
    --------
    >>> import tempfile
    >>> from kit.store import RecordWriter, RunDir
    >>> ledger = Ledger(RunDir(tempfile.mkdtemp()), RecordWriter())
    >>> ledger.entries(), ledger.completed_chunks()
    ({}, [])
    """

    def __init__(self, files: RunDir, writer: RecordWriter) -> None:
        self.files = files
        self.writer = writer

    def entries(self) -> dict[str, dict[str, Any]]:
        """Return the committed chunk files by name (a torn last line, from a crash, is skipped)."""
        path = self.files.ledger
        if not path.is_file():
            return {}
        entries: dict[str, dict[str, Any]] = {}
        with open_file(path) as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                    name = entry["file"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
                if isinstance(name, str) and RunDir.CHUNK_NAME.fullmatch(name):
                    entries[name] = entry
        return entries

    def read_committed(
        self,
        name: str,
        entry: Mapping[str, Any],
        stacklevel: int = 3,
        then: str = "its items run again on resume",
    ) -> ChunkResult | None:
        """Return the chunk file the ledger names ``name``, if it is as it was committed.

        A missing, truncated, altered or unreadable one gives ``None`` and a
        :class:`StoreWarning` naming it, and saying ``then``: what follows.
        """
        path = self.files.chunks / name
        problem = entry_problem(path, entry)
        if problem is None:
            try:
                return self.writer.read_chunk(path)
            except Exception as exc:  # a chunk Kit wrote itself, damaged since
                problem = f"cannot be read ({type(exc).__name__}: {exc})"
        warnings.warn(
            f"chunk file {path} {problem}; {then}",
            StoreWarning,
            stacklevel=stacklevel,
        )
        return None

    def completed_chunks(self, stacklevel: int = 3) -> list[ChunkResult]:
        """Return the chunks the ledger names, ordered by start position.

        A chunk file is read only when the ledger names it with the size and
        digest it had when it was committed. A missing, truncated, altered or
        unreadable one is left out with a :class:`StoreWarning` naming it (its
        items run again on resume); files the ledger does not name are never
        read.
        """
        entries = self.entries()
        out: list[ChunkResult] = []
        for name, entry in entries.items():
            chunk = self.read_committed(name, entry, stacklevel + 1)
            if chunk is not None:
                out.append(chunk)
        out.sort(key=lambda c: c.start)
        chunks = self.files.chunks
        if chunks.is_dir():
            strays = sorted(
                p.name
                for p in chunks.iterdir()
                if not p.name.startswith(".") and p.name not in entries
            )
            if strays:
                warnings.warn(
                    f"{len(strays)} file(s) in {chunks} that Kit's ledger does not "
                    f"name were left alone, unread: {', '.join(strays[:5])} (a chunk whose "
                    "commit a crash interrupted, or a file Kit did not write)",
                    StoreWarning,
                    stacklevel=stacklevel,
                )
        kept: list[ChunkResult] = []
        for chunk in out:
            if kept and chunk.start < kept[-1].stop:
                continue  # cannot happen unless the ledger was edited by hand
            kept.append(chunk)
        return kept

    def commit(self, chunks: Sequence[ChunkResult], paths: Sequence[Path]) -> None:
        """Vouch for written chunk files in the ledger: one write, one fsync."""
        if not chunks:
            return
        if not self.writer.syncs_folder:
            fsync_dir(self.files.chunks)  # the new names, all at once
        lines = b"".join(
            (
                json.dumps(
                    {
                        "file": path.name,
                        "start": chunk.start,
                        "stop": chunk.stop,
                        "size": path.stat().st_size,
                        "sha256": digest(path),
                    }
                )
                + "\n"
            ).encode()
            for chunk, path in zip(chunks, paths, strict=True)
        )
        ledger = self.files.ledger
        new = not ledger.exists()
        with open_file(ledger, "ab") as fh:
            fd = fh.fileno()
            end = os.lseek(fd, 0, os.SEEK_END)
            try:
                # One write of whole lines; a short one (disk full) is undone, so
                # the ledger never keeps half a line for the next one to be glued to.
                if os.write(fd, lines) != len(lines):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
                raise
        if new:
            fsync_dir(self.files.path)

    def drop_torn_line(self) -> None:
        """Cut a last ledger line that a crash left without its end (its chunk runs again)."""
        path = self.files.ledger
        if not path.is_file():
            return
        with open_file(path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)
                fh.flush()
                os.fsync(fh.fileno())
