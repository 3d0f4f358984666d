"""A sweep's record, ``sweep.json``: made, read and checked here for every reader and writer.

A grid sweep and a search write it as their trials go (``kit._sweeps``); a
handle from any process reads it (``kit.detached``), and so does ``kit
export-tracking``. It is data: read as JSON, its trial names checked to be
the sweep's own folders, in the sweep's order, so that no name in it can
send a trial's run elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit._base.errors import KitError
from kit._base.files import read_text
from kit.config._errors import error
from kit.store._rundir import SweepDir

#: The record's format, written into each record as ``kit_sweep``.
FORMAT = 1


def new_record(
    base_hash: str,
    overrides: Sequence[str],
    trials: Sequence[tuple[str, Sequence[str], str]] = (),
    search: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a new sweep's record: its base config's hash, its overrides, its trials so far.

    ``trials`` are (name, overrides, status) triples; a search (``search``:
    its sampler, metric and direction) adds trials as it asks for them.

    Examples
    --------
    >>> new_record("ab12", ["x=1,2"], [("trial-000", ["x=1"], "pending")])["trials"]
    [{'name': 'trial-000', 'overrides': ['x=1'], 'status': 'pending'}]
    """
    record: dict[str, Any] = {"kit_sweep": FORMAT, "config_hash": base_hash}
    record["overrides"] = list(overrides)
    if search is not None:
        record["search"] = search
    record["trials"] = [
        {"name": name, "overrides": list(values), "status": status}
        for name, values, status in trials
    ]
    return record


def read_record(folder: Path) -> dict[str, Any]:
    """Return the record in sweep ``folder``, checked (not interpreted).

    Raises
    ------
    FileNotFoundError
        When ``folder`` holds no record (or a link, or a folder, in its place).
    KitError
        When the record is not one Kit wrote: no list of trials, a trial
        named other than its number's folder, overrides that are not
        strings, a search's count that is not one.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> bad = new_record("ab12", [], [("../elsewhere", [], "pending")])
    >>> _ = (folder / "sweep.json").write_text(json.dumps(bad))
    >>> read_record(folder)
    Traceback (most recent call last):
    ...
    kit.KitError: .../sweep.json is not a sweep record Kit can read: trial 0 is named ...
    """
    path = SweepDir(folder).record
    if path.is_symlink() or not path.is_file():
        raise FileNotFoundError(f"{folder} holds no Kit sweep ({SweepDir.RECORD}); check the path")
    try:
        record = json.loads(read_text(path))
        if not isinstance(record, dict) or not isinstance(record["trials"], list):
            raise TypeError("its trials are no list")
        for number, entry in enumerate(record["trials"]):
            if not isinstance(entry, dict):
                raise TypeError(f"trial {number} is no mapping")
            own = SweepDir(folder).trial(number).path.name
            if entry["name"] != own:
                # Where the trial's run is written comes from its number alone: a name
                # like ../victim would write a whole run outside the sweep folder.
                raise ValueError(f"trial {number} is named {entry['name']!r}, not {own!r}")
            if not all(isinstance(o, str) for o in entry["overrides"]):
                raise TypeError(f"trial {number}'s overrides are not strings")
        count = (record.get("search") or {}).get("trials", 0)
        if type(count) is not int or count < 0:
            raise TypeError(f"its search's trials is {count!r}, not a count")
    except (ValueError, KeyError, TypeError) as exc:
        raise KitError(
            f"{path} is not a sweep record Kit can read: {exc}; it was changed by hand or by "
            "another program: restore it, or give the sweep a folder of its own"
        ) from None
    return record


def check_base(folder: Path, stored: dict[str, Any], base_hash: str) -> None:
    """Refuse to resume a sweep of another base config."""
    if stored.get("config_hash") != base_hash:
        raise error(
            f"{folder} holds this sweep of another base config (hash "
            f"{stored.get('config_hash')}, now {base_hash}): its finished trials would not "
            "be this config's",
            fix="run with the config the sweep began with (`kit config diff` shows the "
            "difference), or give this one its own output_dir",
        )
