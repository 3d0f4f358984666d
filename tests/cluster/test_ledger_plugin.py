"""The scheduler's ledger as a plain scheduler plugin: added without start, removed, replaced."""

from __future__ import annotations

import asyncio
import logging

import pytest
from distributed import Client, Scheduler

from kit.cluster._shared import LEDGER, ClusterLedger


def test_a_ledger_added_with_add_plugin_lets_a_leaving_client_go_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> ClusterLedger:
        async with Scheduler(dashboard_address=":0", port=0) as scheduler:
            ledger = ClusterLedger()
            scheduler.add_plugin(ledger)  # SchedulerPlugin's own example: start is not called
            async with Client(scheduler.address, asynchronous=True):
                pass  # the client leaves: remove_client
            await asyncio.sleep(0)
            assert ledger.scheduler is scheduler
            return ledger

    with caplog.at_level(logging.ERROR, logger="distributed"):
        asyncio.run(scenario())
    assert [r for r in caplog.records if "AttributeError" in r.getMessage()] == []


def test_a_ledger_removed_or_replaced_stops_its_timer_and_tears_nothing_down() -> None:
    async def scenario() -> tuple[bool, list[list[str]]]:
        async with Scheduler(dashboard_address=":0", port=0) as scheduler:
            old = ClusterLedger()
            await old.start(scheduler)
            scheduler.add_plugin(old)
            torn: list[list[str]] = []

            async def tear_down(names: list[str]) -> list[str]:
                torn.append(names)
                return []

            old.tear_down = tear_down  # type: ignore[method-assign]
            old.envs.expired = lambda now, present: ["kit-env:held-by-the-new-ledger"]  # type: ignore[method-assign]
            scheduler.remove_plugin(name=LEDGER)
            scheduler.add_plugin(ClusterLedger())
            await old._expire()
            assert old._expiry is not None
            running = old._expiry.is_running()
            await old.close()
            return running, torn

    running, torn = asyncio.run(scenario())
    assert not running and torn == []
