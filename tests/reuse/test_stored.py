"""Where reused outputs come from: runs beside this one, this user's own, checked, as data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

import kit
from tests.reuse import workload
from tests.reuse.workload import Decode, Numbers


def config(beam: int = 2) -> Any:
    return OmegaConf.create(
        {"decoder": {"beam": beam}, "scoring": {"normalizer": "plain", "metric": "wer"}}
    )


def run(folder: Path, n: int = 8, **options: Any) -> kit.RunResult:
    return Decode(Numbers(config()), output_dir=folder, **options).run(range(n))


def test_a_run_takes_the_records_of_a_run_beside_it_and_says_so_in_its_result_json(
    tmp_path: Path,
) -> None:
    first = run(tmp_path / "a")
    workload.CALLS.clear()
    again = run(tmp_path / "b", verify=0)
    assert not workload.CALLS and again.records == first.records
    stored = kit.attach(tmp_path / "b").result(timeout=30)
    assert isinstance(stored, kit.RunResult)
    assert (stored.stats.reused, stored.stats.computed) == (8, 0)


def test_a_runner_without_forward_keys_reuses_nothing(tmp_path: Path) -> None:
    class Undeclared(Decode):
        forward_keys = None

    Undeclared(Numbers(config()), output_dir=tmp_path / "a").run(range(4))
    workload.CALLS.clear()
    again = Undeclared(Numbers(config()), output_dir=tmp_path / "b").run(range(4))
    assert sum(workload.CALLS.values()) == 4 and again.stats.reused == 0
    assert not (tmp_path / "b" / "reuse.json").exists()


def test_a_run_beside_a_partial_one_computes_only_what_the_other_has_not(tmp_path: Path) -> None:
    run(tmp_path / "a", n=5)
    workload.CALLS.clear()
    again = run(tmp_path / "b", n=8, verify=0)
    assert sorted(workload.CALLS) == [5, 6, 7]
    assert (again.stats.reused, again.stats.computed) == (5, 3)


def test_a_run_folder_others_may_change_or_a_link_is_never_read(tmp_path: Path) -> None:
    open_to_all, link, ledger = tmp_path / "open", tmp_path / "link", tmp_path / "ledger"
    run(open_to_all / "a")
    open_to_all.joinpath("a").chmod(0o777)  # anyone may put files there
    assert run(open_to_all / "b").stats.reused == 0
    run(tmp_path / "elsewhere" / "a")
    link.mkdir()
    os.symlink(tmp_path / "elsewhere" / "a", link / "a")
    assert run(link / "b").stats.reused == 0
    run(ledger / "a")
    (ledger / "a" / "ledger.jsonl").chmod(0o666)  # anyone may name other chunk files
    assert run(ledger / "b").stats.reused == 0


def test_a_chunk_file_changed_after_its_commit_is_not_reused(tmp_path: Path) -> None:
    run(tmp_path / "a")
    chunk = sorted((tmp_path / "a" / "chunks").iterdir())[-1]
    chunk.write_text(chunk.read_text().replace('"hyp": 14', '"hyp": 99'))
    with pytest.warns(kit.errors.StoreWarning, match="has changed|its records are not reused"):
        again = run(tmp_path / "b")
    assert 0 < again.stats.reused < 8
    assert [r["hyp"] for r in again.records] == [2 * i for i in range(8)]


def test_pickled_records_are_never_read_for_reuse(tmp_path: Path) -> None:
    run(tmp_path / "a", record_format="pickle")
    assert run(tmp_path / "b").stats.reused == 0


def test_a_runs_own_resumed_chunks_are_resumed_not_reused(tmp_path: Path) -> None:
    run(tmp_path / "a")
    again = run(tmp_path / "a")
    assert (again.stats.resumed, again.stats.reused) == (8, 0)


def test_batched_runs_reuse_item_by_item(tmp_path: Path) -> None:
    run(tmp_path / "a", n=5)
    workload.CALLS.clear()
    again = Decode(Numbers(config()), output_dir=tmp_path / "b", batch_size=4, verify=0)
    result = again.run(range(8))
    assert (result.stats.reused, result.stats.computed) == (5, 3)
    assert [r["hyp"] for r in result.records] == [2 * i for i in range(8)]


def test_forward_keys_naming_a_key_the_config_lacks_fail_the_run_before_anything_runs(
    tmp_path: Path,
) -> None:
    class Misspelt(Decode):
        forward_keys = ("decoder.beem",)

    with pytest.raises(kit.ConfigError, match=r"did you mean 'decoder.beam'"):
        Misspelt(Numbers(config()), output_dir=tmp_path / "a").run(range(3))
