"""A sweep over beams and normalisers decodes once per beam: outputs reused across trials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kit
from tests.reuse import workload

ITEMS = 1000


def config(**runner: Any) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.reuse.workload.Numbers"},
        "runner": {"_target_": "tests.reuse.workload.Decode", "chunk_size": 250, **runner},
        "items": {"start": 0, "stop": ITEMS},
        "decoder": {"beam": 1},
        "scoring": {"normalizer": "plain", "metric": "wer"},
        "parallel": {"env": "inline"},
    }


GRID = ["decoder.beam=1,2,4,8", "scoring.normalizer=plain,upper,none"]


def test_a_sweep_of_4_beams_by_3_scorings_calls_forward_4000_times_and_makes_the_same_records(
    tmp_path: Path,
) -> None:
    workload.CALLS.clear()
    reused = kit.sweep(config(verify=0), GRID, output_dir=tmp_path / "reused", concurrency=3)
    calls = sum(workload.CALLS.values())
    workload.CALLS.clear()
    fresh = kit.sweep(config(reuse=False), GRID, output_dir=tmp_path / "fresh", concurrency=3)

    assert calls == 4 * ITEMS
    assert sum(workload.CALLS.values()) == 12 * ITEMS
    runs = [r for r in reused.results if r is not None]
    assert [r.records for r in runs] == [r and r.records for r in fresh.results]
    stats = [(r.stats.computed, r.stats.reused) for r in runs]
    assert sorted(stats) == [(0, ITEMS)] * 8 + [(ITEMS, 0)] * 4
