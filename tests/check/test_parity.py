"""``kit check`` names the planted cause of a difference, one runner per cause, on a real cluster.

One worker process of its own, which sees another time zone and language
setting than this process and has as many threads as this process counts:
each runner's planted cause is the only thing that makes it differ.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from omegaconf import OmegaConf

from kit.check import check
from kit.check._sight import driver_threads
from kit.launch import RunRequest
from tests.check import planted

ITEMS = range(12)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A one-worker cluster whose worker sees ``TZ`` and ``KIT_PLANT_LANG`` otherwise."""
    mp = pytest.MonkeyPatch()
    # The nanny writes MALLOC_TRIM_THRESHOLD_ into this process; later clusters must not inherit it.
    mp.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    cluster = LocalCluster(
        n_workers=1,
        threads_per_worker=driver_threads(),
        host="127.0.0.1",
        dashboard_address=None,
        env={"TZ": "Asia/Tokyo", "KIT_PLANT_LANG": "fr"},
    )
    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
        mp.undo()


def checked(runner: Any, **options: Any) -> Any:
    return check(RunRequest.of(runner, ITEMS), n=4, **options)


def config(**values: Any) -> Any:
    return OmegaConf.create({"data": {"lang": "${oc.env:KIT_PLANT_LANG,en}"}, **values})


def test_a_deterministic_runner_passes_every_way(client: Client) -> None:
    verdict = checked(planted.Steady(planted.Plain(config()), client=client, batch_size=3))
    assert verdict.ok, verdict.card()
    assert verdict.parity.compared == {
        "reference vs again": 4,
        "reference vs worker": 4,
        "worker vs batched": 4,
    }
    assert verdict.data is not None and verdict.data.ok
    assert "PASS" in verdict.card()


def test_an_unseeded_draw_is_named_nondeterminism(client: Client) -> None:
    verdict = checked(planted.Unseeded(planted.Plain(OmegaConf.create({})), client=client))
    assert (verdict.ok, verdict.parity.cause) == (False, "nondeterminism")
    differences = {d.field for d in verdict.parity.differences if d.ways == ("reference", "again")}
    assert differences == {"sampled"}


def test_a_batch_that_changes_its_items_is_named_batching(client: Client) -> None:
    runner = planted.Padded(planted.Plain(OmegaConf.create({})), client=client, batch_size=2)
    verdict = checked(runner)
    assert verdict.parity.cause == "batching"
    assert {d.ways for d in verdict.parity.differences} == {("worker", "batched")}
    assert {d.field for d in verdict.parity.differences} == {"centred"}


def test_another_thread_count_is_named_threads(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The driver says it runs items on more threads than the worker has.
    monkeypatch.setenv("KIT_WORKER_THREADS", str(driver_threads() + 1))
    verdict = checked(planted.Threaded(planted.Plain(OmegaConf.create({})), client=client))
    assert verdict.parity.cause == "threads", verdict.card()
    assert f"{driver_threads()} (driver) vs {driver_threads() - 1}" in verdict.parity.why


def test_float32_on_the_workers_is_named_precision(client: Client) -> None:
    verdict = checked(planted.Weighed(planted.Single(OmegaConf.create({})), client=client))
    assert verdict.parity.cause == "precision", verdict.card()
    assert all(d.precision and d.field == "score" for d in verdict.parity.differences)


def test_another_package_version_is_named_versions(client: Client, tmp_path: Path) -> None:
    paths = {
        "driver_path": planted.write_planted(tmp_path / "a", "1.0", "one"),
        "worker_path": planted.write_planted(tmp_path / "b", "2.0", "two"),
    }
    try:
        verdict = checked(planted.Versioned(planted.Installed(config(**paths)), client=client))
    finally:
        client.run(forget_planted, list(paths.values()))
        forget_planted(list(paths.values()))
    assert verdict.parity.cause == "versions", verdict.card()
    assert "planted 1.0 (driver) vs 2.0" in verdict.parity.why


def forget_planted(paths: list[str]) -> None:
    sys.path[:] = [p for p in sys.path if p not in paths]
    sys.modules.pop("planted", None)


def test_an_interpolation_resolved_otherwise_is_named_config(client: Client) -> None:
    verdict = checked(planted.Configured(planted.Plain(config()), client=client))
    assert verdict.parity.cause == "config", verdict.card()
    assert "data.lang: 'en' (driver) vs 'fr'" in verdict.parity.why
    assert verdict.parity.differences[0].where.startswith("from character")


def test_another_time_zone_is_named_environment(client: Client) -> None:
    verdict = checked(planted.Local(planted.Plain(OmegaConf.create({})), client=client))
    assert verdict.parity.cause == "environment", verdict.card()
    assert "TZ: '' (driver) vs 'Asia/Tokyo'" in verdict.parity.why


def test_fields_the_runner_declares_are_not_compared(client: Client) -> None:
    class Unsure(planted.Unseeded):
        check_ignore = ("sampled",)

    verdict = checked(Unsure(planted.Plain(OmegaConf.create({})), client=client))
    assert verdict.ok, verdict.card()
    assert checked(
        planted.Unseeded(planted.Plain(OmegaConf.create({})), client=client), ignore=["sampled"]
    ).ok


def test_the_verdict_is_plain_json(client: Client) -> None:
    verdict = checked(planted.Local(planted.Plain(OmegaConf.create({})), client=client))
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["parity"]["ok"] is False and data["parity"]["cause"] == "environment"
    first = data["parity"]["differences"][0]
    assert set(first) == {"index", "position", "ways", "field", "a", "b", "where", "precision"}
    assert set(data["forecast"]["seconds"]) == {"low", "median", "high"}
    assert data["memory"]["peak_bytes_per_worker"] > 0
