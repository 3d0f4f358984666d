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
import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit._base.atomic import atomic_file
from kit._base.errors import StoreError as StoreError
from kit._base.errors import StoreWarning as StoreWarning
from kit._base.files import open_file
from kit.result import ItemError, RunResult, RunStatus
from kit.store._chunk_result import ChunkResult
from kit.store._formats import RecordWriter
from kit.store._ledger import Ledger
from kit.store._lock import FolderLock, is_folder
from kit.store._manifest import check_same, run_manifest
from kit.store._rundir import RunDir, SweepDir
from kit.store._timings import stats_to_store, stored_timings

#: The committed chunk files (the name :class:`kit.store._rundir.RunDir` gives them).
LEDGER = RunDir.LEDGER


def _store_error(
    path: Path, chunk: ChunkResult, exc: OSError, committed: int, last: ChunkResult | None = None
) -> StoreError:
    stop = (last or chunk).stop - 1
    error = StoreError(
        f"cannot store items {chunk.start}-{stop} in {path}: "
        f"{exc.strerror or exc}; the chunks stored before are kept: free space (or "
        "fix the directory) and run again to resume"
    )
    error.committed = committed
    return error


class RunStore:
    """Read and write one run's output directory: begin or resume it, commit chunks, finish.

    The folder is the run's source of truth: its manifest, the ledger of
    committed chunks (:class:`~kit.store._ledger.Ledger`), errors,
    ``result.json``; the lock (:class:`~kit.store._lock.FolderLock`) says
    which process writes it now.

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
        self.folder_lock = FolderLock(self.path)
        self.ledger = Ledger(self.files, self.writer)
        self._chunks_identity: tuple[int, int] | None = None  # of chunks/, once begun
        self._previous: dict[str, Any] | None = None  # timings of the run a resume found

    # -------------------------------------------------------------- the lock
    def lock(self) -> None:
        """Take the directory's lock; refuse if another live process holds it."""
        self.folder_lock.take()

    def busy(self) -> bool:
        """Whether some process (this one included) holds the directory's lock now."""
        return self.folder_lock.busy()

    def lock_holder(self) -> int | None:
        """Return the pid of the process holding the directory's lock (the kernel says), or None."""
        return self.folder_lock.holder()

    def unlock(self) -> None:
        """Release the lock taken by :meth:`lock`."""
        self.folder_lock.release()

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
        """Return the chunks the ledger names, unchanged, by start (see :class:`Ledger`)."""
        return self.ledger.completed_chunks(stacklevel=4)

    def read_committed(self, name: str, entry: Mapping[str, Any]) -> ChunkResult | None:
        """Return the chunk file the ledger names ``name``, if it is as it was committed."""
        return self.ledger.read_committed(name, entry, stacklevel=4)

    def ledger_entries(self) -> dict[str, dict[str, Any]]:
        """Return the committed chunk files by name (a torn last line, from a crash, is skipped)."""
        return self.ledger.entries()

    # -------------------------------------------------------------- beginning
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
        sweep = SweepDir(self.path).record
        if sweep.exists() or sweep.is_symlink():
            raise StoreError(
                f"{self.path} holds a sweep ({SweepDir.RECORD}); a run written there would "
                "hide it from `kit status` and `kit.attach`: give the run its own output_dir"
            )
        old = self.manifest()
        if old is not None and resume:
            check_same(self.path, old, manifest, config, how)

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
            self.ledger.drop_torn_line()
            done = self.ledger.completed_chunks(stacklevel=4)
        else:
            if self.chunks_dir.exists():
                shutil.rmtree(self.chunks_dir)
            for path in (self.files.errors, self.files.ledger):
                path.unlink(missing_ok=True)
            done = []
        # A resume that finds nothing left to run gives this back: the folder is unchanged.
        self._previous = stored_timings(self.files) if resume else None
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

    # -------------------------------------------------------------- committing
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
                stem = self.files.chunk_stem(chunk.start, chunk.stop)
                paths.append(self.writer.write_in_commit(stem, chunk))
        except OSError as exc:
            failed = chunks[len(paths)]
            # The chunks written before the failure are committed: they are done.
            committed = 0
            with contextlib.suppress(OSError):
                self.ledger.commit(chunks[: len(paths)], paths)
                committed = len(paths)
            raise _store_error(self.path, failed, exc, committed) from exc
        try:
            self.ledger.commit(chunks, paths)
        except OSError as exc:
            raise _store_error(self.path, chunks[0], exc, 0, last=chunks[-1]) from exc
        return paths

    def check_still_there(self) -> None:
        """Raise if the locked folder or its ``chunks/`` was removed or replaced since the start.

        A chunk the ledger names must still be where it was committed: a run
        whose earlier chunks were deleted under it has not stored its items,
        whatever its later chunks say.
        """
        if not self.folder_lock.still_there():
            raise StoreError(
                f"the output directory {self.path} was deleted, moved or replaced while the run "
                "wrote to it; the chunks it held are wherever it went: stop whatever removes "
                "it, then run again (into it, if you moved it back, to resume)"
            )
        if self._chunks_identity is not None and not is_folder(
            self.chunks_dir, self._chunks_identity
        ):
            raise StoreError(
                f"{self.chunks_dir} was deleted, moved or replaced while the run wrote to it, "
                "so the records stored before are gone from this run's folder: stop whatever "
                f"removes it, then run again into {self.path} (the items whose chunks are "
                "missing run again)"
            )

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

    def finish(self, result: RunResult, error: str | None = None) -> None:
        """Write ``result.json`` and the error file; let the writer merge a complete run.

        ``error`` says what ended a run that did not complete (one line).
        """
        if not self.folder_lock.still_there():
            return  # the folder went away: writing would make a new one holding only these
        self.write_errors(result.errors)
        summary = {
            "status": result.status,
            "stats": stats_to_store(result, self._previous),
            "summary": result.summary,
            "finished": time.time(),
            "error": error,
        }
        with atomic_file(self.files.result) as fh:
            json.dump(summary, fh, indent=1, default=repr)
        if result.status == RunStatus.COMPLETED:
            self.writer.merge(self.path, result)
