"""Where reusable forward outputs are found: the run folders beside a run's own.

A run that may be reused writes ``reuse.json`` into its folder: the digest
of its forward (code and config slice), of its env, and each position's
item and item digest. Its records stay where they are, in its checked
chunk store (the ledger's sha256 of every chunk file, records as data;
pickle files are never read here). A later run into the same results root
(a sweep's folder, or the folder holding ``output_dir``) reads those of its
neighbours that match and takes their records for its items that match.

A folder is read only if it is this user's and nobody else may change it,
its ``reuse.json`` too: a record taken from it becomes this run's result,
and a co-user could otherwise plant records there. Nothing read is run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kit._base.errors import UnsafeFileError
from kit._base.files import open_private, write_json
from kit.result import Index
from kit.store._formats import RecordWriter
from kit.store._ledger import Ledger
from kit.store._rundir import RunDir

#: The chunk files read for reuse: records as data (a pickle is never read here).
DATA_SUFFIXES = (".jsonl", ".arrow")

#: The version of ``reuse.json``'s layout.
REUSE_FORMAT = 1


def item_key(index: Index, content: str) -> str:
    """Return what names an item among runs: its index and its content's digest.

    Examples
    --------
    >>> item_key(3, "ab"), item_key("3", "ab")
    ('3|ab', '"3"|ab')
    """
    return f"{json.dumps(index)}|{content}"


def write_reuse(
    folder: Path, forward: str, env: str, indices: Sequence[Index], contents: Sequence[str]
) -> None:
    """Write ``folder``'s ``reuse.json``: what its records at each position depend on."""
    write_json(
        RunDir(folder).reuse,
        {
            "kit_reuse": REUSE_FORMAT,
            "forward": forward,
            "env": env,
            "items": [item_key(i, c) for i, c in zip(indices, contents, strict=True)],
        },
    )


def known_records(
    root: Path, own: Path, forward: str, env: str, wanted: Mapping[str, Index]
) -> dict[Index, Any]:
    """Return the records of ``wanted`` items that runs under ``root`` made alike.

    ``wanted`` maps :func:`item_key` to the index of this run's item. Runs
    are read in name order and an item's first match is taken; a run that
    failed its item offers nothing for it.
    """
    found: dict[Index, Any] = {}
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        if len(found) == len(wanted):
            break
        if folder == own or not _private_folder(folder):
            continue
        stored = _read_reuse(folder)
        if stored is None or (stored["forward"], stored["env"]) != (forward, env):
            continue
        positions = {
            position: wanted[key]
            for position, key in enumerate(stored["items"])
            if key in wanted and wanted[key] not in found
        }
        if positions:
            found.update(_records_at(folder, positions))
    return found


def _private_folder(folder: Path) -> bool:
    """Whether ``folder`` is a real folder (no link) of this user that nobody else may change."""
    return _private(folder) and folder.is_dir()


def _read_reuse(folder: Path) -> dict[str, Any] | None:
    """Return ``folder``'s ``reuse.json`` if it is private to this user and well formed."""
    try:
        with open_private(RunDir(folder).reuse) as fh:
            data = json.load(fh)
    except (OSError, UnsafeFileError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("kit_reuse") != REUSE_FORMAT:
        return None
    items = data.get("items")
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        return None
    if not isinstance(data.get("forward"), str) or not isinstance(data.get("env"), str):
        return None
    return data


def _records_at(folder: Path, positions: Mapping[int, Index]) -> dict[Index, Any]:
    """Return the records ``folder``'s checked chunks hold at ``positions``, by index.

    Only chunk files its ledger names with their committed size and digest
    are read, and only data files (JSON lines, Arrow), never pickles.
    """
    if not all(_private(folder / name) for name in (RunDir.chunks.name, RunDir.ledger.name)):
        return {}
    ledger = Ledger(RunDir(folder), RecordWriter("data"))
    out: dict[Index, Any] = {}
    for name, entry in ledger.entries().items():
        if Path(name).suffix not in DATA_SUFFIXES:
            continue
        chunk = ledger.read_committed(name, entry, stacklevel=5, then="its records are not reused")
        if chunk is None:
            continue
        failed = {error.position for error in chunk.errors}
        for offset, record in enumerate(chunk.records):
            position = chunk.start + offset
            if position in positions and position not in failed and record is not None:
                out[positions[position]] = record
    return out


def _private(path: Path) -> bool:
    """Whether ``path`` (a file or folder, not a link) is this user's and only theirs to change."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & 0o022 and not os.path.islink(path)
