"""What a run asked for, in its manifest, and whether a stored run may be resumed by another.

A resume goes on only with the same format, config, provider and runner,
items, record format, batch size and code (:mod:`kit.store._version`);
otherwise the message says what differs and how to go on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit._base.errors import StoreError
from kit.result import Index
from kit.store._formats import FORMAT_VERSION
from kit.store._rundir import RunDir
from kit.store._version import version_difference


def indices_record(indices: Sequence[Index]) -> dict[str, Any]:
    """Describe ``indices`` for the manifest (a range stays a range); see stored_indices."""
    if isinstance(indices, range):
        return {"range": [indices.start, indices.stop, indices.step]}
    return {"list": list(indices)}


def stored_indices(manifest: Mapping[str, Any], folder: Path) -> Sequence[Index]:
    """Return the items a stored manifest names, checked: one Kit did not write is refused.

    A run folder may be written by someone else: what it says is data to check.

    Examples
    --------
    >>> stored_indices({"indices": {"range": [0, 3, 1]}}, Path("runs/a"))
    range(0, 3)
    >>> stored_indices({"indices": "many"}, Path("runs/a"))
    Traceback (most recent call last):
    ...
    kit.errors.StoreError: runs/a/manifest.json: its indices are not as Kit writes them ...
    """
    try:
        record = manifest["indices"]
        if "range" in record:
            start, stop, step = (int(n) for n in record["range"])
            return range(start, stop, step)
        indices = list(record["list"])
        if all(isinstance(i, int | str) and not isinstance(i, bool) for i in indices):
            return indices
        raise TypeError("an index is neither a number nor a string")
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(
            f"{RunDir(folder).manifest}: its indices are not as Kit writes them ({exc!r}); "
            "the folder was changed by hand or by another program: run into a folder of "
            "your own"
        ) from None


def indices_digest(indices: Sequence[Index]) -> str:
    """Hash of the index list, equal for a range and the same list."""
    digest = hashlib.sha256()
    for index in indices:
        digest.update(repr(index).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _config_hash(config: DictConfig) -> str:
    from kit.config._api import outcome_hash

    return outcome_hash(config)


def run_manifest(
    *,
    config: DictConfig | None,
    provider: str,
    runner: str,
    batch_size: int | None,
    chunk_size: int | str,
    indices: Sequence[Index],
    version: Mapping[str, Any] | None = None,
    record_format: str = "data",
) -> dict[str, Any]:
    """Return the manifest of a run: what was asked, so a resume does only the same work.

    ``version`` holds digests of the code and keywords that make the
    records (see :mod:`kit.store._version`).
    """
    return {
        **(version or {}),
        "format": FORMAT_VERSION,
        "config_hash": None if config is None else _config_hash(config),
        "provider": provider,
        "runner": runner,
        "batch_size": batch_size,
        "chunk_size": chunk_size,
        "n_items": len(indices),
        "indices_digest": indices_digest(indices),
        "indices": indices_record(indices),
        "record_format": record_format,
    }


def check_same(
    path: Path,
    old: dict[str, Any],
    new: dict[str, Any],
    config: DictConfig | None,
    how: str | None = None,
) -> None:
    """Raise a StoreError saying how the run stored at ``path`` differs from ``new``, if it does.

    ``how`` is the advice that ends the message.
    """
    how = how or (
        "start over in a new folder (`-o runs/NEW` on the command line; output_dir=... in "
        "Python) or delete this one first (resume=False in Python deletes the stored results)"
    )
    if old.get("format") != new["format"]:
        raise StoreError(f"{path} holds a run in another format; {how}")
    if old.get("config_hash") != new["config_hash"]:
        diff = config_diff(RunDir(path).config, config)
        raise StoreError(
            f"{path} holds a run of a different config "
            f"(hash {old.get('config_hash')} there, {new['config_hash']} now){diff}; {how}"
        )
    for key, what in (("provider", "provider"), ("runner", "runner")):
        if old.get(key) != new[key]:
            raise StoreError(f"{path} holds a run of {what} {old.get(key)}, not {new[key]}; {how}")
    if old.get("indices_digest") != new["indices_digest"] or old.get("n_items") != new["n_items"]:
        raise StoreError(
            f"{path} holds a run over other items ({old.get('n_items')} items there, "
            f"{new['n_items']} now, or the same number in another order); {how}"
        )
    if old.get("record_format", "data") != new["record_format"]:
        raise StoreError(
            f"{path} holds records stored as {old.get('record_format')}, and this run "
            f"stores them as {new['record_format']}; set runner.record_format="
            f"{old.get('record_format')} to resume it, or {how}"
        )
    # batch_size first: a forward written for batches changes with it, so its code differs too.
    if old.get("batch_size") != new["batch_size"]:
        raise StoreError(
            f"{path} holds a run with batch_size={old.get('batch_size')}, "
            f"not {new['batch_size']}; {how}"
        )
    changed = version_difference(old, new)
    if changed is not None:
        raise StoreError(
            f"{path} holds records another version of this run made: {changed}; "
            f"resuming would mix records of both versions; {how}"
        )


def config_diff(stored: Path, current: DictConfig | None) -> str:
    """Say how ``current`` differs from the config stored at ``stored`` (empty if unknown)."""
    if not stored.is_file() or current is None:
        return ""
    from kit.config import load_config, to_overrides

    try:
        from kit.config import resolve_config

        lines = to_overrides(load_config(stored), resolve_config(current))
    except Exception:
        return ""
    return ": it differs by " + " ".join(lines) if lines else ""
