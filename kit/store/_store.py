"""A run's output directory: the source of truth any process can read or resume.

Layout::

    output_dir/
      manifest.json        what was asked: indices, config hash, classes, chunking
      config.yaml          the resolved config
      chunks/<start>-<stop>.jsonl   one file per completed chunk, written atomically
                           and durably (.arrow or .pkl: see RecordWriter)
      ledger.jsonl         each committed chunk file with its size and sha256
      errors.jsonl         every item error (rewritten as chunks complete)
      result.json          status and statistics, when a run ends
      events.jsonl         the run's event stream (progress, workers, failures, metrics)
      report.html          plots, config and statistics; works offline (needs bokeh)
      status.json          progress of a detached run (rewritten as it goes)
      driver.json, driver.log, job.pkl   the detached driver: pid, output, what it runs

A ``.jsonl`` chunk file starts with a header line, then one line per
position: ``{"p": position, "r": record}`` or ``{"p": position, "e": error}``.
Records holding numpy values, bytes or tuples make it an Arrow file
(``.arrow``: columns ``p``, ``r``, ``e``, ``blobs``; see :mod:`kit.store._records`);
``record_format="pickle"`` makes it a cloudpickle file (``.pkl``). Only files
the ledger names, unchanged, are ever read. A custom :class:`RecordWriter`
can store chunks in any format.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from omegaconf import DictConfig

from kit._base.atomic import atomic_file, fsync_dir
from kit._base.errors import StoreError as StoreError
from kit._base.errors import StoreWarning as StoreWarning
from kit._base.files import UnsafeFileError, open_file, refuse_links
from kit.result import ItemError, RunResult, RunStatus
from kit.store._chunk_result import ChunkResult
from kit.store._formats import RecordWriter
from kit.store._manifest import check_same, run_manifest
from kit.store._rundir import RunDir, SweepDir


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open_file(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: Attempts at the directory's lock when its holder lets go in between.
LOCK_TRIES = 3
#: The committed chunk files (the name :class:`kit.store._rundir.RunDir` gives them).
LEDGER = RunDir.LEDGER
#: What Kit writes in a run directory: none of these may be a symbolic link.
KIT_NAMES = RunDir.NAMES


def _entry_problem(path: Path, entry: dict[str, Any]) -> str | None:
    """Why ``path`` is not the file the ledger ``entry`` recorded, or None."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "is missing"
    if size != entry.get("size"):
        return f"has {size} bytes where {entry.get('size')} were committed (truncated or altered)"
    if _digest(path) != entry.get("sha256"):
        return "differs from what was committed (its digest changed)"
    return None


def _is_folder(path: Path, identity: tuple[int, int] | None) -> bool:
    """Whether ``path`` is the folder whose (device, inode) is ``identity``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    return (info.st_dev, info.st_ino) == identity


class RunStore:
    """Read and write one run's output directory.

    The folder is the run's source of truth: its manifest, the ledger of
    committed chunks, errors, ``result.json``; the lock says which process
    writes it now.

    Examples
    --------
    >>> import tempfile
    >>> store = RunStore(tempfile.mkdtemp())
    >>> store.manifest() is None, store.busy(), store.ledger_entries()
    (True, False, {})
    """

    def __init__(self, path: str | os.PathLike[str], writer: RecordWriter | None = None) -> None:
        self.path = Path(path)
        #: The folder's files, by what they are.
        self.files = RunDir(self.path)
        self.writer = writer or RecordWriter()
        self.chunks_dir = self.files.chunks
        self._lock: IO[str] | None = None
        self._identity: tuple[int, int] | None = None  # (device, inode) of the locked folder
        self._chunks_identity: tuple[int, int] | None = None  # and of its chunks/, once begun
        self._previous: dict[str, Any] | None = None  # timings of the run a resume found

    # -------------------------------------------------------------- locking
    def lock(self) -> None:
        """Take the directory's lock; refuse if another live process holds it."""
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(
                f"output_dir {self.path} is a file, not a directory; choose another output_dir"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            refuse_links(self.path, KIT_NAMES)
            fh = open_file(self.files.lock, "a")
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
                holder = self.lock_holder()
                if holder is not None:
                    fh.close()
                    raise StoreError(
                        f"another run is writing to {self.path} (pid {holder}); wait for it "
                        "to end, cancel it, or choose another output_dir"
                    ) from None
        else:
            fh.close()
            raise StoreError(
                f"another run is writing to {self.path}; wait for it to end, cancel it, or "
                "choose another output_dir"
            )
        info = os.stat(self.path)
        self._identity = (info.st_dev, info.st_ino)
        self._lock = fh

    def busy(self) -> bool:
        """Whether some process (this one included) holds the directory's lock now."""
        path = self.files.lock
        if self._lock is not None:
            return True
        if not path.exists():
            return False
        with open_file(path, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
        return False

    def lock_holder(self) -> int | None:
        """Return the pid of the process holding the directory's lock (the kernel says), or None.

        Read from ``/proc/locks`` (Linux), never from a file in the directory,
        which anyone who can write there could edit.
        """
        try:
            with open_file(self.files.lock) as fh:
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

    def unlock(self) -> None:
        """Release the lock taken by :meth:`lock`."""
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    # -------------------------------------------------------------- reading
    def manifest(self) -> dict[str, Any] | None:
        """Return the stored manifest, or None for a new directory."""
        path = self.files.manifest
        if not path.is_file():
            return None
        with open_file(path) as fh:
            data: dict[str, Any] = json.load(fh)
        return data

    def completed_chunks(self) -> list[ChunkResult]:
        """Return the chunks the ledger names, ordered by start position.

        A chunk file is read only when the ledger names it with the size and
        digest it had when it was committed. A missing, truncated, altered or
        unreadable one is left out with a :class:`StoreWarning` naming it (its
        items run again on resume); files the ledger does not name are never
        read.
        """
        entries = self.ledger_entries()
        out: list[ChunkResult] = []
        for name, entry in entries.items():
            chunk = self.read_committed(name, entry)
            if chunk is not None:
                out.append(chunk)
        out.sort(key=lambda c: c.start)
        if self.chunks_dir.is_dir():
            strays = sorted(
                p.name
                for p in self.chunks_dir.iterdir()
                if not p.name.startswith(".") and p.name not in entries
            )
            if strays:
                warnings.warn(
                    f"{len(strays)} file(s) in {self.chunks_dir} that Kit's ledger does not "
                    f"name were left alone, unread: {', '.join(strays[:5])} (a chunk whose "
                    "commit a crash interrupted, or a file Kit did not write)",
                    StoreWarning,
                    stacklevel=2,
                )
        kept: list[ChunkResult] = []
        for chunk in out:
            if kept and chunk.start < kept[-1].stop:
                continue  # cannot happen unless the ledger was edited by hand
            kept.append(chunk)
        return kept

    def read_committed(self, name: str, entry: Mapping[str, Any]) -> ChunkResult | None:
        """Return the chunk file the ledger names ``name``, if it is as it was committed.

        A missing, truncated, altered or unreadable one gives ``None`` and a
        :class:`StoreWarning` naming it (its items run again on resume).
        """
        path = self.chunks_dir / name
        problem = _entry_problem(path, dict(entry))
        if problem is None:
            try:
                return self.writer.read_chunk(path)
            except Exception as exc:  # a chunk Kit wrote itself, damaged since
                problem = f"cannot be read ({type(exc).__name__}: {exc})"
        warnings.warn(
            f"chunk file {path} {problem}; its items run again on resume",
            StoreWarning,
            stacklevel=3,
        )
        return None

    def ledger_entries(self) -> dict[str, dict[str, Any]]:
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

    # -------------------------------------------------------------- writing
    def run_manifest(self, **request: Any) -> dict[str, Any]:
        """Return the manifest of a run (see :func:`kit.store._manifest.run_manifest`)."""
        return run_manifest(**request, record_format=self.writer.record_format)

    def check_resume(
        self,
        manifest: dict[str, Any],
        config: DictConfig | None,
        resume: bool,
        how: str | None = None,
    ) -> None:
        """Raise the StoreError :meth:`begin` would raise for this run, changing nothing.

        ``how`` replaces the message's advice (a sweep's trial is not resumed
        with ``resume=False``).
        """
        self._refuse_a_sweep()
        old = self.manifest()
        if old is not None and resume:
            check_same(self.path, old, manifest, config, how)

    def _refuse_a_sweep(self) -> None:
        """Refuse to write a run into a sweep's folder: it would hide the sweep."""
        if SweepDir(self.path).record.exists() or SweepDir(self.path).record.is_symlink():
            raise StoreError(
                f"{self.path} holds a sweep ({SweepDir.RECORD}); a run written there would "
                "hide it from `kit status` and `kit.attach`: give the run its own output_dir"
            )

    def open_run(self, request: Mapping[str, Any], resume: bool) -> list[ChunkResult]:
        """Lock the directory, check or write the manifest; return the chunks to reuse.

        ``request`` holds :meth:`run_manifest`'s arguments.
        """
        manifest = self.run_manifest(**request)
        self.lock()
        try:
            n_items = len(request["indices"])
            return [
                c
                for c in self.begin(manifest, config=request["config"], resume=resume)
                if c.stop <= n_items
            ]
        except BaseException:
            self.unlock()
            raise

    def begin(
        self, manifest: dict[str, Any], config: DictConfig | None, resume: bool
    ) -> list[ChunkResult]:
        """Check or write the manifest; return chunks to reuse (none unless resuming).

        Everything is checked before anything changes: a refused resume
        leaves the directory as it was.
        """
        self.check_resume(manifest, config, resume)
        old = self.manifest()
        if old is not None and resume:
            self._drop_torn_ledger_line()
            done = self.completed_chunks()
        else:
            if self.chunks_dir.exists():
                shutil.rmtree(self.chunks_dir)
            for path in (self.files.errors, self.files.ledger):
                path.unlink(missing_ok=True)
            done = []
        # A resume that finds nothing left to run gives this back: the folder is unchanged.
        self._previous = self._stored_timings() if resume else None
        self.files.result.unlink(missing_ok=True)  # ends a previous run, not this one
        self.chunks_dir.mkdir(parents=True, exist_ok=True)
        info = os.stat(self.chunks_dir)
        self._chunks_identity = (info.st_dev, info.st_ino)
        for stale in self.chunks_dir.glob(".*"):
            stale.unlink(missing_ok=True)  # temporary files of an interrupted write
        manifest = dict(manifest, created=old["created"] if old and resume else time.time())
        with atomic_file(self.files.manifest) as fh:
            json.dump(manifest, fh, indent=1)
        if config is not None:
            from kit.config import save_config

            save_config(config, self.files.config)
        return done

    def write_chunk(self, chunk: ChunkResult) -> Path:
        """Store one completed chunk: on disk and in the ledger before it counts as done.

        Raises
        ------
        StoreError
            If the disk is full or the directory cannot be written; the
            chunks stored before are kept, and a later run resumes from them.
        """
        return self.write_chunks([chunk])[0]

    def write_chunks(self, chunks: Sequence[ChunkResult]) -> list[Path]:
        """Store completed chunks in one commit: every file, then one ledger write for all.

        Each chunk keeps a file of its own; the commit waits for the disk
        once for the folder and once for the ledger, however many chunks it
        holds. A crash before the ledger line leaves files the ledger does
        not name: never read, their items run again.

        Raises
        ------
        StoreError
            If the disk is full or the directory cannot be written; the
            chunks stored before are kept, and a later run resumes from them.
        """
        if not chunks:
            return []
        self.check_still_there()
        paths: list[Path] = []
        try:
            for chunk in chunks:
                paths.append(self._write_file(chunk))
        except OSError as exc:
            failed = chunks[len(paths)]
            # The chunks written before the failure are committed: they are done.
            committed = 0
            with contextlib.suppress(OSError):
                self._commit(chunks[: len(paths)], paths)
                committed = len(paths)
            raise self._store_error(failed, exc, committed) from exc
        try:
            self._commit(chunks, paths)
        except OSError as exc:
            raise self._store_error(chunks[0], exc, 0, last=chunks[-1]) from exc
        return paths

    def _store_error(
        self,
        chunk: ChunkResult,
        exc: OSError,
        committed: int,
        last: ChunkResult | None = None,
    ) -> StoreError:
        stop = (last or chunk).stop - 1
        error = StoreError(
            f"cannot store items {chunk.start}-{stop} in {self.path}: "
            f"{exc.strerror or exc}; the chunks stored before are kept: free space (or "
            "fix the directory) and run again to resume"
        )
        error.committed = committed
        return error

    def _still_there(self) -> bool:
        """Whether the folder at ``path`` is still the one this store locked."""
        return _is_folder(self.path, self._identity)

    def _chunks_still_there(self) -> bool:
        """Whether ``chunks/`` is still the folder this run's commits went to."""
        return _is_folder(self.chunks_dir, self._chunks_identity)

    def check_still_there(self) -> None:
        """Raise if the locked folder or its ``chunks/`` was removed or replaced since the start.

        A chunk the ledger names must still be where it was committed: a run
        whose earlier chunks were deleted under it has not stored its items,
        whatever its later chunks say.
        """
        if self._identity is not None and not self._still_there():
            raise StoreError(
                f"the output directory {self.path} was deleted, moved or replaced while the run "
                "wrote to it; the chunks it held are wherever it went: stop whatever removes "
                "it, then run again (into it, if you moved it back, to resume)"
            )
        if self._chunks_identity is not None and not self._chunks_still_there():
            raise StoreError(
                f"{self.chunks_dir} was deleted, moved or replaced while the run wrote to it, "
                "so the records stored before are gone from this run's folder: stop whatever "
                f"removes it, then run again into {self.path} (the items whose chunks are "
                "missing run again)"
            )

    def _commit(self, chunks: Sequence[ChunkResult], paths: Sequence[Path]) -> None:
        """Vouch for written chunk files in the ledger: one write, one fsync."""
        if not chunks:
            return
        if not self.writer.syncs_folder:
            fsync_dir(self.chunks_dir)  # the new names, all at once
        lines = b"".join(
            (
                json.dumps(
                    {
                        "file": path.name,
                        "start": chunk.start,
                        "stop": chunk.stop,
                        "size": path.stat().st_size,
                        "sha256": _digest(path),
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
            fsync_dir(self.path)

    def _write_file(self, chunk: ChunkResult) -> Path:
        return self.writer.write_in_commit(self.files.chunk_stem(chunk.start, chunk.stop), chunk)

    def _drop_torn_ledger_line(self) -> None:
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

    def write_errors(self, errors: Sequence[ItemError]) -> None:
        """Rewrite ``errors.jsonl`` with ``errors`` (at the start and the end of a run)."""
        with atomic_file(self.files.errors) as fh:
            for err in errors:
                fh.write(json.dumps(err.to_dict()) + "\n")

    def append_errors(self, errors: Sequence[ItemError]) -> None:
        """Add a chunk's errors to ``errors.jsonl`` as the run goes.

        Appending keeps a run with many failures linear; the chunk files stay
        the source of truth and :meth:`finish` rewrites the file in order.
        """
        with open_file(self.files.errors, "a") as fh:
            for err in errors:
                fh.write(json.dumps(err.to_dict()) + "\n")

    def _stored_timings(self) -> dict[str, Any] | None:
        """Return the timings the folder's ``result.json`` holds for its items, checked.

        Only a completed run's wall and setup time, chunk count and per-worker
        figures, each of the type Kit writes: the counts, status and summary
        a run writes are always its own.
        """
        try:
            data = json.loads(self.files.result.read_text())
        except (OSError, ValueError):
            return None
        stats = data.get("stats") if isinstance(data, dict) else None
        if data.get("status") != RunStatus.COMPLETED.value or not isinstance(stats, dict):
            return None
        numbers = (int, float)
        workers = stats.get("workers")
        if not (
            all(type(stats.get(k)) in numbers for k in ("wall_seconds", "setup_seconds"))
            and all(type(stats.get(k)) is int for k in ("items", "ok", "failed", "chunks"))
            and isinstance(workers, dict)
            and all(
                isinstance(w, dict)
                and type(w.get("items")) is int
                and type(w.get("chunks")) is int
                and type(w.get("busy_seconds")) in numbers
                for w in workers.values()
            )
        ):
            return None
        kept = ("items", "ok", "failed", "wall_seconds", "setup_seconds", "chunks", "workers")
        return {key: stats[key] for key in kept}

    def finish(self, result: RunResult, error: str | None = None) -> None:
        """Write ``result.json`` and the error file; let the writer merge a complete run.

        ``error`` says what ended a run that did not complete (one line).
        """
        if self._identity is not None and not self._still_there():
            return  # the folder went away: writing would make a new one holding only these
        self.write_errors(result.errors)
        stats = result.stats.to_dict()
        previous = self._previous
        if (
            previous is not None
            and result.status == RunStatus.COMPLETED
            and result.stats.resumed == result.stats.items
            and (previous["items"], previous["ok"], previous["failed"])
            == (result.stats.items, result.stats.ok, result.stats.failed)
        ):
            # Nothing ran: the timings of the run that made these records still hold.
            ran = previous["ok"] + previous["failed"]
            stats.update(
                {key: previous[key] for key in ("wall_seconds", "setup_seconds", "chunks")},
                workers=previous["workers"],
                resumed=0,
                items_per_second=ran / previous["wall_seconds"]
                if previous["wall_seconds"] > 0
                else 0.0,
            )
        summary = {
            "status": result.status,
            "stats": stats,
            "summary": result.summary,
            "finished": time.time(),
            "error": error,
        }
        with atomic_file(self.files.result) as fh:
            json.dump(summary, fh, indent=1, default=repr)
        if result.status == RunStatus.COMPLETED:
            self.writer.merge(self.path, result)
