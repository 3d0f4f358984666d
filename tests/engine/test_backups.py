"""Backup copies run only when they pay: trivial fault-free work calls forward once per item."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kit import ConfigError
from tests.workloads import Affine, LoggedSleeps, ToyProvider, expected, lines, toy_config


@pytest.mark.slow
def test_trivial_items_are_forwarded_exactly_once(tmp_path: Path, local: dict) -> None:
    for attempt in range(20):
        log_dir = tmp_path / str(attempt)
        log_dir.mkdir()
        runner = Affine(ToyProvider(toy_config(log_dir, log_calls=True)), parallel=local)
        assert runner.run(range(120)).records == expected(range(120))
        calls = Counter(int(line) for line in lines(log_dir, "calls.log"))
        assert calls == Counter(range(120)), f"run {attempt}: {calls.most_common(3)}"


@pytest.mark.slow
def test_backups_off_never_copies_a_chunk(tmp_path: Path, local: dict) -> None:
    # The shape where auto sends a copy (test_runner.py): a chunk queued behind a long
    # one while the other worker idles. Off, every item runs exactly once.
    sleeps = [1.5, 0.3, 0.6, 0.3]
    runner = LoggedSleeps(
        ToyProvider(toy_config(tmp_path)), parallel=local, chunk_size=1, backups="off"
    )
    runner.run(range(2), sleeps=[0.0, 0.0])
    (tmp_path / "calls.log").unlink()
    result = runner.run(range(4), sleeps=sleeps)
    assert [r["idx"] for r in result.records] == [0, 1, 2, 3]
    assert Counter(lines(tmp_path, "calls.log")) == Counter(["0", "1", "2", "3"])


def test_backups_is_a_checked_choice() -> None:
    with pytest.raises(ConfigError, match="did you mean 'off'"):
        Affine(ToyProvider(toy_config()), backups="of")
