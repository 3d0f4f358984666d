"""Runner.run / submit: records, failures, batches, parity between inline and a LocalCluster."""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import kit
from kit import ItemError, RunError
from kit._engine.inject import ForwardSpec
from kit.cluster._plugin import ProviderPlugin
from kit.store._chunk_result import ChunkResult
from tests.workloads import (
    Affine,
    Batched,
    BySize,
    LoggedSleeps,
    OpaqueRecords,
    ToyProvider,
    WhereRan,
    expected,
    lines,
    toy_config,
)

MODES = ["inline", "local"]


def parallel_for(mode: str) -> dict[str, Any] | None:
    return None if mode == "inline" else {"env": "local", "n_workers": 2}


@pytest.mark.parametrize("mode", MODES)
def test_records_come_back_in_the_order_of_indices(mode: str) -> None:
    indices = [5, 3, 9, 0, 3]
    result = Affine(ToyProvider(toy_config()), parallel=parallel_for(mode)).run(indices)
    assert result.records == expected(indices)
    assert result.status == "completed"
    assert result.stats.items == result.stats.ok == 5


def test_every_mode_gives_the_same_records() -> None:
    indices = list(range(300))
    outputs = [
        Affine(ToyProvider(toy_config()), parallel=parallel_for(mode)).run(indices).records
        for mode in MODES
    ]
    assert outputs[0] == outputs[1] == expected(indices)


@pytest.mark.parametrize("mode", MODES)
def test_failures_are_recorded_and_the_run_goes_on(mode: str) -> None:
    runner = Affine(ToyProvider(toy_config(fail_on=[2, 7])), parallel=parallel_for(mode))
    result = runner.run(range(10))
    assert result.status == "completed"
    assert result.failed_indices == [2, 7]
    assert result.records[2] is None and result.records[3] == {"idx": 3, "y": 7}
    error = result.errors[0]
    assert isinstance(error, ItemError)
    assert (error.index, error.position, error.type) == (2, 2, "builtins.ValueError")
    assert error.message == "item 2 is broken"
    assert 'raise ValueError(f"item {idx} is broken")' in error.traceback
    assert "in forward" in error.traceback
    assert result.stats.failed == 2 and result.stats.ok == 8
    assert result.summary == {
        "mean_y": pytest.approx(sum(2 * i + 1 for i in range(10) if i not in (2, 7)) / 8)
    }


@pytest.mark.parametrize("mode", MODES)
def test_on_error_raise_stops_at_the_first_failure(mode: str) -> None:
    runner = Affine(
        ToyProvider(toy_config(fail_on=[3], sleep=0.01)),
        parallel=parallel_for(mode),
        on_error="raise",
        chunk_size=2,
    )
    with pytest.raises(RunError) as info:
        runner.run(range(100))
    err = info.value
    assert err.error is not None and err.error.index == 3
    assert "item 3 failed (on_error='raise')" in str(err)
    assert "item 3 is broken" in str(err)  # the remote traceback is in the message
    assert err.result.status == "stopped"
    assert err.result.stats.not_run > 50  # pending work was cancelled


def test_max_failures_stops_after_that_many() -> None:
    runner = Affine(
        ToyProvider(toy_config(fail_on=list(range(0, 100, 2)))), max_failures=5, chunk_size=4
    )
    with pytest.raises(RunError, match=r"items failed \(max_failures=5\)") as info:
        runner.run(range(100))
    assert 5 <= info.value.result.stats.failed < 10


@pytest.mark.parametrize("mode", MODES)
def test_batches(mode: str) -> None:
    runner = Batched(ToyProvider(toy_config()), parallel=parallel_for(mode), batch_size=4)
    assert runner.run(range(10)).records == [2 * i for i in range(10)]


@pytest.mark.parametrize("mode", MODES)
def test_batches_by_size_group_similar_items_under_the_budget(mode: str) -> None:
    runner = BySize(
        ToyProvider(toy_config()), parallel=parallel_for(mode), batch_by="size", max_batch=40
    )
    result = runner.run(range(1, 31))
    assert result.failed_indices == [13]
    assert "item 13 has no length" in result.errors[0].message
    done = [r for r in result.records if r is not None]
    assert [r["y"] for r in done] == [2 * i for i in range(1, 31) if i != 13]  # in item order
    for record in done:
        batch = record["batch"]
        assert sum(batch) <= 40 or len(batch) == 1
        assert max(batch) <= 2 * min(batch)  # never a small item with a long one
    assert any(len(r["batch"]) > 1 for r in done)


def test_batching_by_size_needs_a_static_method_and_a_budget() -> None:
    provider = ToyProvider(toy_config())
    with pytest.raises(
        kit.ConfigError,
        match=r"runner\.batch_by: BySize has no static method 'sise'; did you mean 'size'",
    ):
        BySize(provider, batch_by="sise", max_batch=10)
    with pytest.raises(
        kit.ConfigError,
        match=r"runner\.max_batch: runner\.batch_by is set but runner\.max_batch is not",
    ):
        BySize(provider, batch_by="size")
    with pytest.raises(
        kit.ConfigError,
        match=r"runner\.batch_by: runner\.max_batch is set but runner\.batch_by is not",
    ):
        BySize(provider, max_batch=10)


def test_a_batch_with_the_wrong_number_of_results_fails_its_items() -> None:
    result = Batched(ToyProvider(toy_config(short_batches=True)), batch_size=4).run(range(6))
    assert result.failed_indices == list(range(6))
    assert result.errors[0].message == (
        "forward returned 3 results for a batch of 4 items; return one result per item"
    )


@pytest.mark.parametrize("mode", MODES)
def test_submit_returns_at_once_and_streams_records(mode: str) -> None:
    runner = Affine(ToyProvider(toy_config(sleep=0.01)), parallel=parallel_for(mode), chunk_size=5)
    began = time.perf_counter()
    handle = runner.submit(range(60))
    assert time.perf_counter() - began < 0.5
    seen = dict(handle)
    assert seen == {i: {"idx": i, "y": 2 * i + 1} for i in range(60)}
    assert handle.done() and handle.progress.done == 60
    assert handle.result().records == expected(range(60))


@pytest.mark.parametrize("mode", MODES)
def test_cancel_keeps_what_is_done(mode: str) -> None:
    runner = Affine(ToyProvider(toy_config(sleep=0.02)), parallel=parallel_for(mode), chunk_size=2)
    handle = runner.submit(range(400))
    while handle.progress.done < 4:
        time.sleep(0.01)
    handle.cancel()
    result = handle.result(timeout=30)
    assert result.status == "cancelled"
    assert 4 <= result.stats.ok < 400
    done = [r for r in result.records if r is not None]
    assert done == [{"idx": r["idx"], "y": 2 * r["idx"] + 1} for r in done]


def test_result_timeout() -> None:
    handle = Affine(ToyProvider(toy_config(sleep=0.05)), chunk_size=1).submit(range(100))
    with pytest.raises(TimeoutError, match=r"has not finished after 0\.1 s"):
        handle.result(timeout=0.1)
    handle.cancel()
    handle.result(timeout=30)


def test_an_int_means_range() -> None:
    assert Affine(ToyProvider(toy_config())).run(3).records == expected(range(3))


def test_bad_indices_name_the_position() -> None:
    with pytest.raises(TypeError, match=r"indices\[2\] is None \(NoneType\)"):
        Affine(ToyProvider(toy_config())).run([1, 2, None])


def test_string_indices() -> None:
    class Echo(kit.Runner):
        @staticmethod
        def forward(idx: str) -> str:
            return idx.upper()

    assert Echo(ToyProvider(toy_config())).run(["utt1", "utt2"]).records == ["UTT1", "UTT2"]


def test_bad_runner_options_are_config_errors() -> None:
    with pytest.raises(kit.ConfigError, match=r"runner\.on_error: 'ignor' is not a valid choice"):
        Affine(ToyProvider(toy_config()), on_error="ignor")
    with pytest.raises(kit.ConfigError, match=r"parallel\.env: 'lcoal' is not a valid choice"):
        Affine(ToyProvider(toy_config()), parallel={"env": "lcoal"})


def test_stats_count_items_per_worker(local: dict) -> None:
    result = Affine(ToyProvider(toy_config(sleep=0.002)), parallel=local).run(range(400))
    per_worker = result.stats.workers
    assert sum(w.items for w in per_worker.values()) == 400
    assert len(per_worker) == 2  # both workers took part
    assert result.stats.items_per_second > 0


def test_records_that_are_not_json_come_back(local: dict) -> None:
    from tests.workloads import Opaque

    result = OpaqueRecords(ToyProvider(toy_config()), parallel=local).run(range(5))
    assert result.records == [Opaque(2 * i) for i in range(5)]


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    frame = Affine(ToyProvider(toy_config(fail_on=[1]))).run(range(3)).to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["index", "idx", "y", "error"]
    assert frame.loc[1, "error"] == "builtins.ValueError: item 1 is broken"


def test_what_is_sent_to_workers_pickles() -> None:
    provider = ToyProvider(toy_config())
    plugin = ProviderPlugin(
        "name",
        "ToyProvider",
        cloudpickle.dumps(provider.worker_setup_fn()),
        cloudpickle.dumps(provider),
    )
    for obj in (
        plugin,
        ForwardSpec.of(Affine.forward, "Affine.forward"),
        Affine.forward,
        ChunkResult(0, [1], [], "0", 0.1),
        ItemError(1, 0, "builtins.ValueError", "m", "tb", "0"),
    ):
        assert pickle.loads(pickle.dumps(obj)) is not None


def test_inline_runs_on_the_driver(tmp_path: Path) -> None:
    import os

    result = WhereRan(ToyProvider(toy_config(tmp_path))).run(range(3))
    assert {r["pid"] for r in result.records} == {os.getpid()}
    assert lines(tmp_path, "setup.log") == [f"{os.getpid()} 2 -"]


def test_a_chunk_queued_behind_a_long_one_runs_on_the_idle_worker(
    local: dict, tmp_path: Path
) -> None:
    # Item 0 is long. Whichever worker runs it gets one more chunk queued behind it
    # while the other worker soon idles: that chunk must not wait for item 0. (Items
    # take 0.3 s, well above a round trip, so a backup copy pays: see backups="auto".)
    sleeps = [1.5, 0.3, 0.6, 0.3]
    runner = LoggedSleeps(ToyProvider(toy_config(tmp_path)), parallel=local, chunk_size=1)
    runner.run(range(2), sleeps=[0.0, 0.0])  # warm: env built on both workers
    (tmp_path / "calls.log").unlink()
    result = runner.run(range(4), sleeps=sleeps)
    # Only a queued chunk is copied: item 0's, running from the start, never is.
    assert lines(tmp_path, "calls.log").count("0") == 1
    assert [r["idx"] for r in result.records] == [0, 1, 2, 3]
    long_pid = result.records[0]["pid"]
    assert all(r["pid"] != long_pid for r in result.records[1:]), result.records
    assert result.stats.items == 4 and sum(w.items for w in result.stats.workers.values()) == 4
