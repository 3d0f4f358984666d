"""An Experiment's run history, kept on disk: one numbered output directory per run.

Each run the app starts is stored like any Kit run (``config.yaml``,
``result.json``, chunks), so the table is rebuilt from the folder: after a
kernel restart, or in a colleague's notebook opened on the same folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit import to_overrides
from kit._atomic import atomic_file


def new_run_dir(runs_dir: Path) -> Path:
    """Create and return the next numbered run directory (``001``, ``002``...).

    Two notebooks on one folder never get the same number: the directory is
    made with ``exist_ok=False`` and the next number is tried if it exists.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> new_run_dir(root).name, new_run_dir(root).name
    ('001', '002')
    """
    runs_dir.mkdir(parents=True, exist_ok=True)
    numbers = [int(d.name) for d in runs_dir.iterdir() if d.name.isdigit()]
    n = max(numbers, default=0) + 1
    while True:
        path = runs_dir / f"{n:03d}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1


def record_unstarted(
    run_dir: Path, config: DictConfig, status: str, error: str | None, items: int | None = None
) -> None:
    """Store a run that ended before Kit opened its directory (a provider that failed).

    A run that got as far as its first chunk is stored by Kit itself; this
    keeps the others in the history too, with what ended them.
    """
    if (run_dir / "result.json").exists():
        return
    if not (run_dir / "config.yaml").exists():
        with atomic_file(run_dir / "config.yaml") as fh:
            fh.write(OmegaConf.to_yaml(config))
    with atomic_file(run_dir / "result.json") as fh:
        # None ran: the counts say so (items asked for, 0 ok, 0 failed), not blanks.
        stats = {} if items is None else {"items": items, "ok": 0, "failed": 0}
        json.dump({"status": status, "stats": stats, "summary": {}, "error": error}, fh, indent=1)


def read_history(runs_dir: Path) -> list[dict[str, Any]]:
    """Return one row per stored run, oldest first: changes, status, statistics, summary.

    ``changes`` are the overrides from the first run's config to this one's.
    A run still going (no ``result.json`` yet) reads as ``running``.
    """
    if not runs_dir.is_dir():
        return []
    rows: list[dict[str, Any]] = []
    first: DictConfig | None = None
    for run_dir in sorted(d for d in runs_dir.iterdir() if d.name.isdigit() and d.is_dir()):
        config_path = run_dir / "config.yaml"
        if not config_path.exists():
            continue  # just made, its run not begun
        config = OmegaConf.load(config_path)
        assert isinstance(config, DictConfig)
        if first is None:
            first, changes = config, "(first run)"
        else:
            changes = " ".join(to_overrides(first, config)) or "(same config)"
        try:
            result = json.loads((run_dir / "result.json").read_text())
        except FileNotFoundError:
            result = {"status": "running", "stats": {}, "summary": {}}
        stats = result.get("stats") or {}
        row: dict[str, Any] = {
            "run": run_dir.name,
            "changes": changes,
            "status": result.get("status", "unknown"),
            "items": stats.get("items", ""),
            "ok": stats.get("ok", ""),
            "failed": stats.get("failed", ""),
            "seconds": stats.get("wall_seconds", ""),
            "items/s": stats.get("items_per_second", ""),
        }
        row.update(result.get("summary") or {})
        if result.get("error"):
            row["error"] = str(result["error"]).splitlines()[0]
        rows.append(row)
    return rows
