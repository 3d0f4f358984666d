"""A run folder read back: the :class:`~kit.result.RunResult` its chunks and ``result.json`` hold.

What a detached run, a sweep's finished trials and :func:`kit.compare` read
from a folder; the chunks are read through the ledger, never a file it does
not name.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kit._base.files import read_json
from kit.result import ItemError, RunResult, RunStats, RunStatus, WorkerStats
from kit.store._chunk_result import ChunkResult
from kit.store._formats import RecordWriter
from kit.store._manifest import stored_indices
from kit.store._rundir import RunDir
from kit.store._store import RunStore, StoreError, StoreWarning


def within(
    chunks: Iterable[ChunkResult], n_items: int, folder: str | os.PathLike[str]
) -> Iterator[ChunkResult]:
    """Yield the chunks that lie within the run's ``n_items``; warn of any other.

    A ledger and chunk written by someone else may name positions the
    manifest does not have: their records are never read back as the run's.
    """
    for chunk in chunks:
        if 0 <= chunk.start <= chunk.stop <= n_items:
            yield chunk
        else:
            warnings.warn(
                f"{folder}: a stored chunk holds positions {chunk.start} to {chunk.stop}, "
                f"outside the run's {n_items} items; it was left out (the folder was "
                "changed by hand or by another program)",
                StoreWarning,
                stacklevel=3,
            )


def reader(
    output_dir: str | os.PathLike[str], manifest: Mapping[str, Any], *, allow_pickle: bool
) -> RunStore:
    """Return a store that reads the folder's chunks; pickles only with ``allow_pickle``."""
    if manifest.get("record_format") == "pickle" and not allow_pickle:
        raise StoreError(
            f"the records in {output_dir} are stored as pickle files, and reading them runs "
            "code that whoever can write that folder may have put there; if you trust them, "
            "read it with kit.attach(..., allow_pickle=True) (only your own files that nobody "
            "else may change are read)"
        )
    return RunStore(output_dir, RecordWriter("pickle" if allow_pickle else "data"))


def read_result(output_dir: str | os.PathLike[str], *, allow_pickle: bool = False) -> RunResult:
    """Rebuild a :class:`RunResult` from an output directory.

    Records stored as pickle files are read only with ``allow_pickle``
    (unpickling runs code; see :meth:`RecordWriter.read_chunk`). A run whose
    stored chunks do not cover every item (a chunk file lost or damaged
    since) is not ``completed``, whatever ``result.json`` says.
    """
    manifest = RunStore(output_dir).manifest()
    if manifest is None:
        raise FileNotFoundError(f"{output_dir} has no manifest.json")
    store = reader(output_dir, manifest, allow_pickle=allow_pickle)
    indices = stored_indices(manifest, Path(output_dir))
    records: list[Any] = [None] * len(indices)
    errors: list[ItemError] = []
    covered = 0
    for chunk in within(store.completed_chunks(), len(indices), output_dir):
        records[chunk.start : chunk.stop] = chunk.records
        errors.extend(chunk.errors)
        covered += chunk.stop - chunk.start
    errors.sort(key=lambda e: e.position)
    summary = read_json(RunDir(output_dir).result) or {}
    raw = dict(summary.get("stats") or {})
    raw.pop("items_per_second", None)
    raw.pop("computed", None)
    workers = {k: WorkerStats(**v) for k, v in (raw.pop("workers", None) or {}).items()}
    stats = (
        RunStats(**raw, workers=workers)
        if raw
        else RunStats(len(indices), 0, 0, len(indices), 0, 0.0, 0.0, 0)
    )
    status = RunStatus(summary.get("status", RunStatus.ERROR))
    if status is RunStatus.COMPLETED and covered < len(indices):
        status = RunStatus.ERROR  # what was stored is not all there (warned about above)
    return RunResult(
        indices=indices,
        records=records,
        errors=errors,
        stats=stats,
        # No result.json: the run did not end cleanly (its driver was killed, say).
        status=status,
        output_dir=Path(output_dir),
        summary=summary.get("summary") or {},
    )
