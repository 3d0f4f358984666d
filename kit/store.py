"""A run's output directory: the source of truth any process can read or resume.

Layout::

    output_dir/
      manifest.json        what was asked: indices, config hash, classes, chunking
      config.yaml          the resolved config
      chunks/<start>-<stop>.jsonl   one file per completed chunk, written atomically
      errors.jsonl         every item error (rewritten as chunks complete)
      result.json          status and statistics, when a run ends
      events.jsonl         the run's event stream (progress, workers, failures, metrics)
      report.html          plots, config and statistics; works offline (needs bokeh)
      status.json          progress of a detached run (rewritten as it goes)
      driver.json, driver.log, job.pkl   the detached driver: pid, output, what it runs

A chunk file starts with a header line, then one line per position: ``{"p":
position, "r": record}`` or ``{"p": position, "e": error}``. Records that are
not plain JSON (dicts with string keys, lists, strings, numbers, booleans,
null) make the chunk a cloudpickle file ``<start>-<stop>.pkl`` instead. A
custom :class:`RecordWriter` can store chunks in any format.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import cloudpickle
from omegaconf import DictConfig

from kit._atomic import atomic_file
from kit._chunk import ChunkResult
from kit._errors import KitError
from kit.result import Index, ItemError, RunResult

FORMAT_VERSION = 1


def _plain_json(value: Any) -> bool:
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return True
    if kind is list:
        return all(_plain_json(v) for v in value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    return False


class RecordWriter:
    """How chunks of records are written to and read from the output directory.

    The default writes JSON lines and falls back to cloudpickle for records
    that are not plain JSON. Subclass it to store records your own way
    (ESPnet3's open/write/close pattern maps onto :meth:`write_chunk`, its
    merge onto :meth:`merge`): a chunk must be written atomically and read
    back as the same :class:`ChunkResult`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from kit._chunk import ChunkResult
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> chunk = ChunkResult(0, [{"y": 1}, 2], [], "0", 0.1)
    >>> path = RecordWriter().write_chunk(folder / "0-2", chunk)
    >>> path.name, RecordWriter().read_chunk(path).records
    ('0-2.jsonl', [{'y': 1}, 2])
    """

    #: Endings of the chunk files this writer reads.
    suffixes: tuple[str, ...] = (".jsonl", ".pkl")

    def write_chunk(self, stem: Path, chunk: ChunkResult) -> Path:
        """Write ``chunk`` to ``stem`` plus a suffix, atomically; return the path."""
        if all(_plain_json(r) for r in chunk.records):
            path = stem.with_name(stem.name + ".jsonl")
            errors = {e.position: e.to_dict() for e in chunk.errors}
            with atomic_file(path) as fh:
                header = {
                    "kit_chunk": FORMAT_VERSION,
                    "start": chunk.start,
                    "stop": chunk.stop,
                    "worker": chunk.worker,
                    "busy_seconds": chunk.busy_seconds,
                }
                fh.write(json.dumps(header) + "\n")
                for offset, record in enumerate(chunk.records):
                    pos = chunk.start + offset
                    row = {"p": pos, "e": errors[pos]} if pos in errors else {"p": pos, "r": record}
                    fh.write(json.dumps(row) + "\n")
            return path
        path = stem.with_name(stem.name + ".pkl")
        with atomic_file(path, "wb") as fh:
            cloudpickle.dump(chunk, fh)
        return path

    def read_chunk(self, path: Path) -> ChunkResult:
        """Read back a chunk written by :meth:`write_chunk`."""
        if path.suffix == ".pkl":
            with path.open("rb") as fh:
                chunk = cloudpickle.load(fh)
            assert isinstance(chunk, ChunkResult)
            return chunk
        with path.open() as fh:
            header = json.loads(fh.readline())
            records: list[Any] = []
            errors: list[ItemError] = []
            for line in fh:
                row = json.loads(line)
                if "e" in row:
                    errors.append(ItemError(**row["e"]))
                    records.append(None)
                else:
                    records.append(row["r"])
        return ChunkResult(
            header["start"], records, errors, header["worker"], header["busy_seconds"]
        )

    def merge(self, output_dir: Path, result: RunResult) -> None:
        """Combine a completed run's chunks (e.g. into one file); the default does nothing."""


def indices_record(indices: Sequence[Index]) -> dict[str, Any]:
    """Describe ``indices`` compactly for the manifest (a range stays a range)."""
    if isinstance(indices, range):
        return {"range": [indices.start, indices.stop, indices.step]}
    return {"list": list(indices)}


def indices_from_record(record: dict[str, Any]) -> Sequence[Index]:
    """Inverse of :func:`indices_record`."""
    if "range" in record:
        return range(*record["range"])
    return list(record["list"])


def indices_digest(indices: Sequence[Index]) -> str:
    """Hash of the index list, equal for a range and the same list."""
    digest = hashlib.sha256()
    for index in indices:
        digest.update(repr(index).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _config_hash(config: DictConfig) -> str:
    from kit.config import config_hash

    return config_hash(config)


class StoreError(KitError, RuntimeError):
    """An output directory cannot be used for this run; the message says why and what to do.

    Examples
    --------
    >>> issubclass(StoreError, RuntimeError)
    True
    """


class RunStore:
    """Read and write one run's output directory."""

    def __init__(self, path: str | os.PathLike[str], writer: RecordWriter | None = None) -> None:
        self.path = Path(path)
        self.writer = writer or RecordWriter()
        self.chunks_dir = self.path / "chunks"
        self._lock: IO[str] | None = None

    # -------------------------------------------------------------- locking
    def lock(self) -> None:
        """Take the directory's lock; refuse if another live process holds it."""
        self.path.mkdir(parents=True, exist_ok=True)
        fh = (self.path / ".lock").open("a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            fh.close()
            raise StoreError(
                f"another run is writing to {self.path} (pid {holder}); wait for it to end, "
                "cancel it, or choose another output_dir"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._lock = fh

    def busy(self) -> bool:
        """Whether some process (this one included) holds the directory's lock now."""
        path = self.path / ".lock"
        if self._lock is not None:
            return True
        if not path.exists():
            return False
        with path.open("a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
        return False

    @property
    def locked(self) -> bool:
        """Whether this process holds the directory's lock."""
        return self._lock is not None

    def unlock(self) -> None:
        """Release the lock taken by :meth:`lock`."""
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    # -------------------------------------------------------------- reading
    def manifest(self) -> dict[str, Any] | None:
        """Return the stored manifest, or None for a new directory."""
        path = self.path / "manifest.json"
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def completed_chunks(self) -> list[ChunkResult]:
        """Every chunk file stored, ordered by start position, overlaps dropped."""
        if not self.chunks_dir.is_dir():
            return []
        paths = sorted(
            p
            for p in self.chunks_dir.iterdir()
            if not p.name.startswith(".") and p.suffix in self.writer.suffixes
        )
        chunks = sorted((self.writer.read_chunk(p) for p in paths), key=lambda c: c.start)
        out: list[ChunkResult] = []
        for chunk in chunks:
            if out and chunk.start < out[-1].stop:
                continue  # cannot happen unless files were copied in by hand
            out.append(chunk)
        return out

    # -------------------------------------------------------------- writing
    def open_run(
        self,
        *,
        config: DictConfig | None,
        provider: str,
        runner: str,
        batch_size: int | None,
        chunk_size: int | str,
        indices: Sequence[Index],
        resume: bool,
    ) -> list[ChunkResult]:
        """Lock the directory, check or write the manifest; return the chunks to reuse.

        The manifest records what was asked, so a later run resumes only the same work.
        """
        manifest = {
            "format": FORMAT_VERSION,
            "config_hash": None if config is None else _config_hash(config),
            "provider": provider,
            "runner": runner,
            "batch_size": batch_size,
            "chunk_size": chunk_size,
            "n_items": len(indices),
            "indices_digest": indices_digest(indices),
            "indices": indices_record(indices),
        }
        self.lock()
        try:
            return [c for c in self.begin(manifest, config, resume) if c.stop <= len(indices)]
        except BaseException:
            self.unlock()
            raise

    def begin(
        self, manifest: dict[str, Any], config: DictConfig | None, resume: bool
    ) -> list[ChunkResult]:
        """Check or write the manifest; return chunks to reuse (none unless resuming)."""
        old = self.manifest()
        (self.path / "result.json").unlink(missing_ok=True)  # ends a previous run, not this one
        if old is not None and resume:
            self._check_same(old, manifest, config)
            done = self.completed_chunks()
        else:
            if self.chunks_dir.exists():
                shutil.rmtree(self.chunks_dir)
            (self.path / "errors.jsonl").unlink(missing_ok=True)
            done = []
        self.chunks_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.chunks_dir.glob(".*"):
            stale.unlink(missing_ok=True)  # temporary files of an interrupted write
        manifest = dict(manifest, created=old["created"] if old and resume else time.time())
        with atomic_file(self.path / "manifest.json") as fh:
            json.dump(manifest, fh, indent=1)
        if config is not None:
            from kit.config import save_config

            save_config(config, self.path / "config.yaml")
        return done

    def _check_same(
        self, old: dict[str, Any], new: dict[str, Any], config: DictConfig | None
    ) -> None:
        how = (
            "pass resume=False to start over (the stored results are deleted), "
            "or choose another output_dir"
        )
        if old.get("format") != new["format"]:
            raise StoreError(f"{self.path} holds a run in another format; {how}")
        if old.get("config_hash") != new["config_hash"]:
            diff = self._config_diff(config)
            raise StoreError(
                f"{self.path} holds a run of a different config "
                f"(hash {old.get('config_hash')} there, {new['config_hash']} now){diff}; {how}"
            )
        for key, what in (("provider", "provider"), ("runner", "runner")):
            if old.get(key) != new[key]:
                raise StoreError(
                    f"{self.path} holds a run of {what} {old.get(key)}, not {new[key]}; {how}"
                )
        if (
            old.get("indices_digest") != new["indices_digest"]
            or old.get("n_items") != new["n_items"]
        ):
            raise StoreError(
                f"{self.path} holds a run over other items ({old.get('n_items')} items there, "
                f"{new['n_items']} now, or the same number in another order); {how}"
            )
        if old.get("batch_size") != new["batch_size"]:
            raise StoreError(
                f"{self.path} holds a run with batch_size={old.get('batch_size')}, "
                f"not {new['batch_size']}; {how}"
            )

    def _config_diff(self, current: DictConfig | None) -> str:
        stored = self.path / "config.yaml"
        if not stored.is_file() or current is None:
            return ""
        from kit.config import load_config, to_overrides

        try:
            from kit.config import resolve_config

            lines = to_overrides(load_config(stored), resolve_config(current))
        except Exception:
            return ""
        return ": it differs by " + " ".join(lines) if lines else ""

    def write_chunk(self, chunk: ChunkResult) -> Path:
        """Store one completed chunk atomically."""
        stem = self.chunks_dir / f"{chunk.start:010d}-{chunk.stop:010d}"
        return self.writer.write_chunk(stem, chunk)

    def write_errors(self, errors: Sequence[ItemError]) -> None:
        """Rewrite ``errors.jsonl`` with ``errors`` (at the start and the end of a run)."""
        with atomic_file(self.path / "errors.jsonl") as fh:
            for err in errors:
                fh.write(json.dumps(err.to_dict()) + "\n")

    def append_errors(self, errors: Sequence[ItemError]) -> None:
        """Add a chunk's errors to ``errors.jsonl`` as the run goes.

        Appending keeps a run with many failures linear; the chunk files stay
        the source of truth and :meth:`finish` rewrites the file in order.
        """
        with (self.path / "errors.jsonl").open("a") as fh:
            for err in errors:
                fh.write(json.dumps(err.to_dict()) + "\n")

    def finish(self, result: RunResult, error: str | None = None) -> None:
        """Write ``result.json`` and the error file; let the writer merge a complete run.

        ``error`` says what ended a run that did not complete (one line).
        """
        self.write_errors(result.errors)
        summary = {
            "status": result.status,
            "stats": result.stats.to_dict(),
            "summary": result.summary,
            "finished": time.time(),
            "error": error,
        }
        with atomic_file(self.path / "result.json") as fh:
            json.dump(summary, fh, indent=1, default=repr)
        if result.status == "completed":
            self.writer.merge(self.path, result)
