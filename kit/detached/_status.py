"""A run's ``status.json``: written by an event view as the run goes, read back checked."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kit._base.files import write_json
from kit.events import ChunkFinished, Event, RunFinished, RunStarted
from kit.store._rundir import RunDir


class StatusWriter:
    """An event view that keeps ``status.json`` current (at most ~4 writes a second)."""

    def __init__(
        self,
        output_dir: Path,
        describe: Mapping[str, Any],
        session: Callable[[], Mapping[str, Any] | None] = lambda: None,
    ) -> None:
        self.path = RunDir(output_dir).status
        self.base = dict(describe)
        self._session = session
        self.state: dict[str, Any] = {"state": "starting", "done": 0, "failed": 0, "total": 0}
        self._last = 0.0
        self._started = time.monotonic()
        self._recent_failures: list[tuple[Any, str]] = []

    def __call__(self, event: Event) -> None:
        """Fold ``event`` into the status and write it out."""
        now = time.monotonic()
        if isinstance(event, RunStarted):
            self.base["session"] = self._session()
            self.state.update(
                state="running",
                total=event.total,
                done=event.resumed,
                resumed=event.resumed,
                workers=event.workers,
                dashboard=event.dashboard,
            )
        elif isinstance(event, ChunkFinished):
            self._recent_failures = (self._recent_failures + list(event.failures))[-10:]
            ran = event.done - self.state.get("resumed", 0)
            self.state.update(
                done=event.done,
                failed=event.failed_total,
                items_per_second=ran / max(now - self._started, 1e-9),
                recent_failures=self._recent_failures,
            )
            if now - self._last < 0.25:
                return
        elif isinstance(event, RunFinished):
            self.state.update(
                state=event.status.value, done=event.done, failed=event.failed, error=event.error
            )
        self._last = now
        write_json(self.path, {**self.base, **self.state, "updated": time.time()})


def well_formed(status: dict[str, Any]) -> dict[str, Any]:
    """Return ``status`` with each field Kit reads of the type Kit writes (else a default).

    ``status.json`` may have been edited, or written by another version: a
    reader shows what it can instead of failing on a wrong type.

    Examples
    --------
    >>> well_formed({"state": 3, "done": "x", "total": 10, "recent_failures": 5})
    {'state': '3', 'done': 0, 'total': 10, 'recent_failures': [], 'failed': 0, 'session': {}}
    """
    out = dict(status)
    out["state"] = str(status.get("state", "unknown"))
    for key in ("done", "total", "failed"):
        value = status.get(key, 0)
        out[key] = value if type(value) is int and value >= 0 else 0
    rate = status.get("items_per_second")
    if rate is not None:
        out["items_per_second"] = float(rate) if type(rate) in (int, float) else None
    failures = status.get("recent_failures")
    out["recent_failures"] = (
        [f for f in failures if isinstance(f, list) and len(f) == 2]
        if isinstance(failures, list)
        else []
    )
    session = status.get("session")
    out["session"] = session if isinstance(session, dict) else {}
    if not isinstance(out["session"].get("parallel", {}), dict):
        out["session"] = dict(out["session"], parallel={})
    return out
