"""Records stored as data come back as they went in, or fail their item alone, saying why."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.events import ChunkFinished
from tests.workloads import BadRecords, EmptyEnv, ManyMetrics, NumpyKinds, numpy_record, same

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")


def test_structured_masked_matrix_and_record_arrays_come_back_as_they_went_in(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    ran = NumpyKinds(EmptyEnv({}), output_dir=out, chunk_size=3).run(range(14))
    assert ran.stats.failed == 0
    want = [numpy_record(i) for i in range(14)]
    back = kit.attach(out).result()
    resumed = NumpyKinds(EmptyEnv({}), output_dir=out, chunk_size=3).run(range(14))
    assert resumed.stats.resumed == 14
    for records in (ran.records, back.records, resumed.records):
        assert all(same(w, r) for w, r in zip(want, records, strict=True))


@pytest.mark.parametrize("where", ["inline", "local"])
def test_a_record_that_cannot_be_stored_fails_its_item_alone_at_once(
    tmp_path: Path, where: str, local: dict[str, Any]
) -> None:
    parallel = local if where == "local" else {"env": "inline"}
    runner = BadRecords(EmptyEnv({}), output_dir=tmp_path / "run", parallel=parallel)
    events: list[Any] = []
    result = runner.run(range(6), on_event=events.append)
    assert result.status == "completed"
    failed = {e.index: e.message for e in result.errors}
    assert sorted(failed) == [1, 2]
    assert failed[1] == (
        "the record[1][1][1][1][1][1]... nests more than 100 levels deep (does it hold "
        "itself?), which Kit does not store as data; return plain values (str, numbers, "
        "lists, dicts), numpy arrays or bytes, or set runner.record_format: pickle"
    )
    assert "nests more than 100 levels deep" in failed[2]
    assert result.records[3] == {"metrics": {"huge": 10**400, "wer": 0.5}}
    sums = [e.metrics for e in events if isinstance(e, ChunkFinished)]
    assert sum(m["wer"][1] for m in sums if "wer" in m) == 4  # item 3's wer counts
    assert not any("huge" in m for m in sums)


def test_metric_names_past_two_hundred_are_ignored_with_one_warning() -> None:
    events: list[Any] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ManyMetrics(EmptyEnv({}), chunk_size=10).run(range(300), on_event=events.append)
    mine = [w for w in caught if "metric names" in str(w.message)]
    assert len(mine) == 1
    assert str(mine[0].message).startswith(
        "kit: this run reports more than 200 metric names; 'item-199' and the others"
    )
    names = set().union(*(e.metrics for e in events if isinstance(e, ChunkFinished)))
    assert len(names) == 200 and "wer" in names
