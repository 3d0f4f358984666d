"""A run history on disk: numbered run folders, what each stored, read back as rows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit._base.atomic import atomic_file
from kit._base.files import UnsafeFileError, read_json, read_text
from kit._base.format import first_line
from kit.config import to_overrides
from kit.store._rundir import RunDir


def new_run_dir(runs_dir: Path, prefix: str = "") -> Path:
    """Create and return the next numbered run directory (``001``, ``002``...).

    Two notebooks on one folder never get the same number: the directory is
    made with ``exist_ok=False`` and the next number is tried if it exists.
    With a ``prefix``, the folders are numbered apart (``sweep-001``...).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> new_run_dir(root).name, new_run_dir(root).name, new_run_dir(root, "sweep-").name
    ('001', '002', 'sweep-001')
    """
    runs_dir.mkdir(parents=True, exist_ok=True)
    numbers = [
        int(d.name[len(prefix) :])
        for d in runs_dir.iterdir()
        if d.name.startswith(prefix) and d.name[len(prefix) :].isdigit()
    ]
    n = max(numbers, default=0) + 1
    while True:
        path = runs_dir / f"{prefix}{n:03d}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1


def record_experiment(run_dir: Path, config: DictConfig, selection: dict[str, Any]) -> None:
    """Store what the history compares: the config as edited (unresolved) and the items.

    ``config.yaml``, which the run writes, is resolved (``${...}`` replaced
    by values); changes are read from this one instead, so an interpolation
    nobody edited is no change. ``selection`` says which items ran: their
    ``count``, ``how`` ("first" or "random"), ``seed``, ``of`` (the pool's
    size) and ``digest`` (a hash of the item list).

    Examples
    --------
    >>> import tempfile
    >>> from kit import load_config
    >>> run_dir = new_run_dir(Path(tempfile.mkdtemp()))
    >>> record_experiment(run_dir, load_config({"beam": 5}), {"count": 3, "how": "first"})
    >>> sorted(p.name for p in run_dir.iterdir())
    ['experiment.json']
    """
    with atomic_file(RunDir(run_dir).experiment) as fh:
        json.dump({"config": OmegaConf.to_yaml(config), "items": selection}, fh, indent=1)


def items_digest(items: list[Any]) -> str:
    """Return a short hash of an item list (the same items, in order, hash alike).

    Examples
    --------
    >>> items_digest([1, 2, 3]) == items_digest([1, 2, 3]) != items_digest([1, 2])
    True
    """
    return hashlib.sha256(json.dumps([str(i) for i in items]).encode()).hexdigest()[:16]


def describe_items(selection: dict[str, Any]) -> str:
    """Say which items ran, e.g. ``random 10 of 250, seed 1``.

    Examples
    --------
    >>> describe_items({"count": 10, "how": "random", "seed": 1, "of": 250})
    'random 10 of 250, seed 1'
    >>> describe_items({"count": 5, "how": "first", "seed": 0, "of": 100})
    'first 5 of 100'
    """
    text = (
        f"{selection.get('how', '?')} {selection.get('count', '?')} of {selection.get('of', '?')}"
    )
    if selection.get("how") == "random":
        text += f", seed {selection.get('seed')}"
    return text


def record_unstarted(
    run_dir: Path, config: DictConfig, status: str, error: str | None, items: int | None = None
) -> None:
    """Store a run that ended before Kit opened its directory (a provider that failed).

    A run that got as far as its first chunk is stored by Kit itself; this
    keeps the others in the history too, with what ended them.

    Examples
    --------
    >>> import tempfile
    >>> from kit import load_config
    >>> runs = Path(tempfile.mkdtemp())
    >>> record_unstarted(new_run_dir(runs), load_config({"beam": 5}), "error", "no model")
    >>> [(row["run"], row["status"], row["error"]) for row in read_history(runs)]
    [('001', 'error', 'no model')]
    """
    files = RunDir(run_dir)
    if files.result.exists():
        return
    if not files.config.exists():
        with atomic_file(files.config) as fh:
            fh.write(OmegaConf.to_yaml(config))
    with atomic_file(files.result) as fh:
        # None ran: the counts say so (items asked for, 0 ok, 0 failed), not blanks.
        stats = {} if items is None else {"items": items, "ok": 0, "failed": 0}
        json.dump({"status": status, "stats": stats, "summary": {}, "error": error}, fh, indent=1)


def _where_output_goes(override: str) -> bool:
    key = override.lstrip("+~").split("=", 1)[0]
    return key == "output_dir" or key.endswith(".output_dir")


def _stored(run_dir: Path) -> tuple[DictConfig, dict[str, Any]] | None:
    """Return the run's config as edited and its item selection ({} from older Kits)."""
    # Through read_json: a shared folder's files are read as data, never through a link.
    stored = read_json(RunDir(run_dir).experiment)
    try:
        assert stored is not None
        config = OmegaConf.create(stored["config"])
        selection = dict(stored.get("items") or {})
    except (AssertionError, ValueError, KeyError, TypeError):
        try:
            text = read_text(RunDir(run_dir).config)
        except (OSError, UnsafeFileError):
            return None  # just made, its run not begun (or not a config Kit wrote)
        config, selection = OmegaConf.create(text), {}
    assert isinstance(config, DictConfig)
    return config, selection


def _sample(
    name: str,
    selection: dict[str, Any],
    compared: dict[str, Any],
    first: tuple[str, DictConfig, dict[str, Any]] | None,
) -> str:
    if not selection:
        return ""
    text = describe_items(selection)
    if first is not None and first[0] != name and selection.get("digest") != compared.get("digest"):
        text += f" · not the items of {first[0]}"
    return text


def read_history(runs_dir: Path, runs: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Return one row per stored run, oldest first: changes, items, status, statistics, summary.

    ``changes`` are the overrides from the first run's config (as edited,
    not resolved) to this one's, leaving out where the output went.
    ``sample`` says which items ran; when they are not the first run's
    items, it says so (its WER, say, is then not comparable as it is).
    ``runs`` keeps only the runs named (``["003", "004"]``), compared with
    the first of them. A run still going (no ``result.json`` yet) reads as
    ``running``.

    Examples
    --------
    >>> import tempfile
    >>> from kit import load_config
    >>> runs = Path(tempfile.mkdtemp())
    >>> for beam in (1, 5):
    ...     record_experiment(new_run_dir(runs), load_config({"beam": beam}), {})
    >>> [(row["run"], row["changes"], row["status"]) for row in read_history(runs)]
    [('001', '(first run)', 'running'), ('002', 'beam=5', 'running')]
    """
    if not runs_dir.is_dir():
        return []
    rows: list[dict[str, Any]] = []
    first: tuple[str, DictConfig, dict[str, Any]] | None = None
    wanted = None if runs is None else set(runs)
    for run_dir in sorted(d for d in runs_dir.iterdir() if d.name.isdigit() and d.is_dir()):
        if wanted is not None and run_dir.name not in wanted:
            continue
        stored = _stored(run_dir)
        if stored is None:
            continue
        config, selection = stored
        if first is None:
            first, changes = (run_dir.name, config, selection), "(first run)"
        else:
            edits = [o for o in to_overrides(first[1], config) if not _where_output_goes(o)]
            changes = " ".join(edits) or "(same config)"
        files = RunDir(run_dir)
        if files.result.exists() or files.result.is_symlink():
            result = read_json(files.result) or {"status": "unknown", "error": "unreadable"}
        else:
            result = {"status": "running", "stats": {}, "summary": {}}
        stats = result.get("stats") or {}
        row: dict[str, Any] = {
            "run": run_dir.name,
            "changes": changes,
            "status": result.get("status", "unknown"),
            "items": stats.get("items", ""),
            "sample": _sample(run_dir.name, selection, first[2] if first else {}, first),
            "ok": stats.get("ok", ""),
            "failed": stats.get("failed", ""),
            "seconds": stats.get("wall_seconds", ""),
            "items/s": stats.get("items_per_second", ""),
        }
        if not selection:
            del row["sample"]  # a run stored without it: nothing to say
        row.update(result.get("summary") or {})
        if result.get("error"):
            row["error"] = first_line(result["error"])
        rows.append(row)
    return rows
