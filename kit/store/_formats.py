"""How a run's chunks of records are stored: the record formats and the writer.

``data`` (JSON lines, or Arrow for numpy values and bytes) is never executed
on reading; ``pickle`` is, so it is read only from files the ledger names.
The folder's names are in :mod:`kit.store._rundir`; what was asked, and
whether a resume may go on, in :mod:`kit.store._manifest`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cloudpickle

from kit._base.atomic import atomic_file
from kit._base.errors import StoreError
from kit._base.files import UnsafeFileError, open_file, open_private
from kit.result import Index, ItemError, RunResult
from kit.store import _records
from kit.store._chunk_result import ChunkResult, drop_unpicklable, fail_records

#: The version of what Kit writes in a run folder (chunk headers, the manifest).
FORMAT_VERSION = 2

RECORD_FORMATS = ("data", "pickle")


class RecordWriter:
    """How chunks of records are written to and read from the output directory.

    With ``record_format="data"`` (the default) nothing stored is ever
    executed on reading: plain JSON records go to JSON lines (``.jsonl``),
    records holding numpy arrays and scalars, bytes or tuples to an Arrow
    file (``.arrow``, see :mod:`kit.store._records` for the mapping), and a record
    that is neither fails as an item error naming what it holds. With
    ``"pickle"`` every chunk is a cloudpickle file (``.pkl``): any record
    works, but reading a chunk runs code, so Kit reads only the files its
    ledger names with the size and digest they had when written.

    Subclass it to store records your own way (ESPnet3's open/write/close
    pattern maps onto :meth:`write_chunk`, its merge onto :meth:`merge`): a
    chunk must be written atomically and read back as the same
    :class:`ChunkResult`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from kit.store._chunk_result import ChunkResult, drop_unpicklable, fail_records
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> chunk = ChunkResult(0, [{"y": 1}, 2], [], "0", 0.1)
    >>> path = RecordWriter().write_chunk(folder / "0-2", chunk)
    >>> path.name, RecordWriter().read_chunk(path).records
    ('0-2.jsonl', [{'y': 1}, 2])
    """

    #: ``data`` or ``pickle`` (a class default too, for subclasses with their own ``__init__``).
    record_format: str = "data"

    def __init__(self, record_format: str = "data") -> None:
        if record_format not in RECORD_FORMATS:
            raise ValueError(
                f"record_format must be one of {', '.join(RECORD_FORMATS)}, got {record_format!r}"
            )
        self.record_format = record_format

    def admit(self, chunk: ChunkResult, indices: Sequence[Index]) -> ChunkResult:
        """Return ``chunk`` with every record this writer cannot store turned into an item error.

        ``indices`` are the run's indices (to name the failed items).
        """
        own = indices[chunk.start : chunk.stop]
        if self.record_format == "pickle":
            return drop_unpicklable(chunk, own)
        return fail_records(chunk, own, _data_problem)

    def write_chunk(self, stem: Path, chunk: ChunkResult) -> Path:
        """Write ``chunk`` to ``stem`` plus a suffix, atomically and durably; return the path."""
        return self._write(stem, chunk, sync_folder=True)

    @property
    def syncs_folder(self) -> bool:
        """Whether this writer makes each chunk's name durable itself (a subclass's own writing).

        Kit's own writer leaves the folder to the store's commit, which syncs
        it once for all the chunks it takes.
        """
        return type(self).write_chunk is not RecordWriter.write_chunk

    def write_in_commit(self, stem: Path, chunk: ChunkResult) -> Path:
        """Write ``chunk`` as part of a store's commit, which makes the folder durable after."""
        if self.syncs_folder:
            return self.write_chunk(stem, chunk)
        return self._write(stem, chunk, sync_folder=False)

    def _write(self, stem: Path, chunk: ChunkResult, sync_folder: bool) -> Path:
        """Write ``chunk``; the file's data reaches the disk, its name too if ``sync_folder``."""
        header = {
            "kit_chunk": FORMAT_VERSION,
            "start": chunk.start,
            "stop": chunk.stop,
            "worker": chunk.worker,
            "busy_seconds": chunk.busy_seconds,
        }
        errors = {e.position: e.to_dict() for e in chunk.errors}
        durable: bool | str = True if sync_folder else "data"
        if self.record_format == "pickle":
            path = stem.with_name(stem.name + ".pkl")
            with atomic_file(path, "wb", durable=durable) as fh:
                cloudpickle.dump(chunk, fh)
            return path
        if all(_records.is_plain(r) for r in chunk.records):
            path = stem.with_name(stem.name + ".jsonl")
            with atomic_file(path, durable=durable) as fh:
                fh.write(json.dumps(header) + "\n")
                for offset, record in enumerate(chunk.records):
                    pos = chunk.start + offset
                    row = {"p": pos, "e": errors[pos]} if pos in errors else {"p": pos, "r": record}
                    fh.write(json.dumps(row) + "\n")
            return path
        return self._write_arrow(
            stem.with_name(stem.name + ".arrow"), chunk, header, errors, durable
        )

    @staticmethod
    def _write_arrow(
        path: Path,
        chunk: ChunkResult,
        header: dict[str, Any],
        errors: dict[int, Any],
        durable: bool | str = True,
    ) -> Path:
        pa = _pyarrow()
        positions: list[int] = []
        values: list[str | None] = []
        failures: list[str | None] = []
        blob_lists: list[list[bytes]] = []
        for offset, record in enumerate(chunk.records):
            pos = chunk.start + offset
            blobs: list[bytes] = []
            positions.append(pos)
            if pos in errors:
                failures.append(json.dumps(errors[pos]))
                values.append(None)
            else:
                failures.append(None)
                values.append(json.dumps(_records.encode(record, blobs)))
            blob_lists.append(blobs)
        table = pa.table(
            {
                "p": pa.array(positions, pa.int64()),
                "r": pa.array(values, pa.string()),
                "e": pa.array(failures, pa.string()),
                "blobs": pa.array(blob_lists, pa.list_(pa.large_binary())),
            }
        ).replace_schema_metadata({"kit_chunk": json.dumps(header)})
        with (
            atomic_file(path, "wb", durable=durable) as fh,
            pa.ipc.new_file(fh, table.schema) as out,
        ):
            out.write_table(table)
        return path

    def read_chunk(self, path: Path) -> ChunkResult:
        """Read back a chunk written by :meth:`write_chunk`.

        A pickle file is read only by a writer whose ``record_format`` is
        ``pickle`` (the reader's choice, never the directory's), and only when
        it is the reader's own file that nobody else may change: unpickling
        runs code.
        """
        if path.suffix == ".pkl":
            if self.record_format != "pickle":
                raise StoreError(
                    f"{path} is a pickle file and this reader reads records as data; Kit does "
                    "not unpickle it (that would run code from the directory): if you trust "
                    "whoever wrote it, read it with kit.attach(..., allow_pickle=True) or "
                    "resume with runner.record_format=pickle"
                )
            try:
                fh = open_private(path)
            except UnsafeFileError as exc:
                raise StoreError(
                    f"{exc}; Kit unpickles only your own files that nobody else may change "
                    "(unpickling runs code)"
                ) from None
            with fh:
                chunk = cloudpickle.load(fh)
            if not isinstance(chunk, ChunkResult):
                raise StoreError(f"{path} does not hold a chunk of records")
            return chunk
        if path.suffix == ".arrow":
            return self._read_arrow(path)
        with open_file(path) as fh:
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

    @staticmethod
    def _read_arrow(path: Path) -> ChunkResult:
        pa = _pyarrow()
        with open_file(path, "rb") as fh:
            table = pa.ipc.open_file(pa.py_buffer(fh.read())).read_all()
        header = json.loads(table.schema.metadata[b"kit_chunk"])
        records: list[Any] = []
        errors: list[ItemError] = []
        columns = table.to_pydict()
        for value, failure, blobs in zip(columns["r"], columns["e"], columns["blobs"], strict=True):
            if failure is not None:
                errors.append(ItemError(**json.loads(failure)))
                records.append(None)
            else:
                records.append(_records.decode(json.loads(value), blobs))
        return ChunkResult(
            header["start"], records, errors, header["worker"], header["busy_seconds"]
        )

    def merge(self, output_dir: Path, result: RunResult) -> None:
        """Combine a completed run's chunks (e.g. into one file); the default does nothing."""


def _data_problem(record: Any) -> str | None:
    what = _records.unstorable(record)
    if what is None:
        return None
    return (
        f"{what}, which Kit does not store as data; return plain values (str, numbers, "
        "lists, dicts), numpy arrays or bytes, or set runner.record_format: pickle"
    )


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.ipc
    except ImportError:
        raise ImportError(
            "records holding numpy values or bytes are stored as Arrow files, which needs "
            "pyarrow: pip install pyarrow"
        ) from None
    return pyarrow
