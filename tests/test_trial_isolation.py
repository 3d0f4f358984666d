"""One trial's env killing its worker fails that trial alone, naming memory and the limit.

A real LocalCluster whose workers may hold 300 MB: an env of 1.5 GB kills the
worker building it (its nanny's memory limit), and the nanny starts it again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kit
from tests.workloads import Dying, Hungry, Picky, Sized, Where

SMALL = {
    "env": "local",
    "n_workers": 2,
    "max_envs": 4,
    "options": {"memory_limit": "300MB", "threads_per_worker": 2},
}
MEMORY = (
    "Hungry: worker {}'s process was stopped by its nanny for passing its memory limit of "
    "286 MiB while building the env; it is not built again on this worker. Give each worker "
    "more memory"
)


def config(**values: Any) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.workloads.Hungry"},
        "runner": {"_target_": "tests.workloads.Sized", "chunk_size": 4},
        "size_mb": 0,
        "tag": "a",
        "items": {"stop": 24},
        "parallel": SMALL,
        **values,
    }


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_an_env_that_kills_its_workers_fails_its_trial_alone(tmp_path: Path) -> None:
    result = kit.sweep(
        config(), ["size_mb=0,1500", "tag=a,b"], output_dir=tmp_path / "s", concurrency=4
    )
    rows = {row["trial"]: row for row in result.rows()}
    for name in ("trial-000", "trial-001"):  # the siblings: 0 MB envs
        assert rows[name]["status"] == "completed", rows[name].get("error")
        assert rows[name]["ok"] == 24 and rows[name]["failed"] == 0, rows[name]
    for name in ("trial-002", "trial-003"):  # 1.5 GB envs, on 300 MB workers
        assert rows[name]["status"] == "error", rows[name]
        assert any(rows[name]["error"].startswith(MEMORY.format(n)) for n in (0, 1)), rows[name]
    # No worker is left building the killer again and again: the cluster serves a run.
    after = Sized(Hungry(config(tag="after"))).run(range(8))
    assert [r["size"] for r in after.records] == [0] * 8


def test_a_run_whose_env_kills_its_workers_says_so(tmp_path: Path) -> None:
    runner = Sized(Hungry(config(size_mb=1500, tag="alone")), parallel=SMALL)
    with pytest.raises(kit.errors.ProviderSetupError) as failed:
        runner.run(range(4))
    assert any(str(failed.value).startswith(MEMORY.format(n)) for n in (0, 1)), failed.value


@pytest.mark.parametrize(
    ("how", "said"),
    [("exit", "exited with code 3"), ("segfault", "was killed by signal 11 (SIGSEGV")],
)
def test_an_env_that_ends_its_worker_is_named_a_crash_not_memory(how: str, said: str) -> None:
    runner = Sized(Dying({"how": how}), parallel={**SMALL, "n_workers": 1})
    with pytest.raises(kit.errors.ProviderSetupError) as failed:
        runner.run(range(4))
    message = str(failed.value)
    assert message.startswith(f"Dying: worker 0's process {said}"), message
    assert "memory" not in message


TWO = {"env": "local", "n_workers": 2, "options": {"threads_per_worker": 2}}


def test_an_env_missing_on_a_worker_is_built_again_once_not_retried_per_item(
    tmp_path: Path,
) -> None:
    # Worker 1's build fails when the worker starts, then works: a task builds it again there.
    config = {"log_dir": str(tmp_path), "fail_on": 1, "times": 1}
    result = Where(Picky(config), parallel=TWO, chunk_size=2).run(range(200))
    assert (result.stats.ok, result.stats.failed) == (200, 0)
    assert {r["where"] for r in result.records} == {0, 1}  # both workers ran items
    assert len((tmp_path / "builds-1.log").read_text().splitlines()) == 2  # once more, not per item


def test_a_worker_that_cannot_build_the_env_gets_no_more_chunks_and_no_item_fails(
    tmp_path: Path,
) -> None:
    config = {"log_dir": str(tmp_path), "fail_on": 1, "times": -1}
    result = Where(Picky(config), parallel=TWO, chunk_size=2).run(range(200))
    assert (result.stats.ok, result.stats.failed) == (200, 0)
    assert {r["where"] for r in result.records} == {0}
    assert len((tmp_path / "builds-1.log").read_text().splitlines()) == 2  # at start, and once
