"""A provider setup that hangs: cancel() ends the run within seconds, setup_timeout bounds it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import kit
from kit import RunStatus
from kit.errors import ProviderSetupError
from tests.workloads import Affine, HangingProvider, ToyProvider, expected, lines, toy_config

MODES = ["inline", "local"]


def parallel_of(request: pytest.FixtureRequest, mode: str) -> dict[str, Any] | None:
    return request.getfixturevalue("local") if mode == "local" else None


def wait_for(condition: Any, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds} s"
        time.sleep(0.02)


@pytest.mark.parametrize("mode", MODES)
def test_cancel_ends_a_run_stuck_in_setup_and_the_late_env_is_released(
    tmp_path: Path, request: pytest.FixtureRequest, mode: str
) -> None:
    parallel = parallel_of(request, mode)
    release = tmp_path / "release"
    cfg = toy_config(tmp_path, release=str(release))
    handle = Affine(HangingProvider(cfg), parallel=parallel).submit(range(4))
    # The run is in setup once the cluster is up and the build has begun.
    wait_for(lambda: handle.session is not None, "the session start")
    time.sleep(0.3)
    assert handle.status is RunStatus.STARTING
    handle.cancel()
    result = handle.result(timeout=10)
    assert result.status is RunStatus.CANCELLED
    assert result.records == [None] * 4
    release.touch()
    builds = 1 if mode == "inline" else 2
    # The builds given up on end, and what they built is closed, not kept.
    wait_for(lambda: len(lines(tmp_path, "teardown.log")) == builds, "the late teardown")
    assert len(lines(tmp_path, "setup.log")) == builds
    # The session goes on: a run right after builds its own env and completes.
    after = Affine(ToyProvider(toy_config()), parallel=parallel).run(range(4))
    assert after.records == expected(range(4))


@pytest.mark.parametrize("mode", MODES)
def test_setup_timeout_ends_a_hung_setup_with_a_clear_error(
    tmp_path: Path, request: pytest.FixtureRequest, mode: str
) -> None:
    parallel = parallel_of(request, mode)
    if parallel is not None:
        kit.get_session(parallel).wait_for_workers(2)  # the bound is for the setup alone
    release = tmp_path / "release"
    cfg = toy_config(tmp_path, release=str(release))
    runner = Affine(HangingProvider(cfg), parallel=parallel, setup_timeout=0.5)
    try:
        with pytest.raises(ProviderSetupError) as info:
            runner.run(range(4))
    finally:
        release.touch()  # let the builds given up on end
    assert str(info.value) == (
        "HangingProvider: building the env took longer than 0.5 s (runner.setup_timeout); "
        "the build goes on in the background and its env is released when it ends. Check "
        "what the provider's setup waits for (a download, a lock, a device), or raise "
        "runner.setup_timeout"
    )


def test_setup_timeout_is_a_runner_config_key() -> None:
    with pytest.raises(kit.ConfigError) as info:
        Affine(ToyProvider(toy_config()), setup_timeout=-1)
    assert str(info.value).splitlines()[:2] == [
        "runner.setup_timeout: must be at least 0, got -1.0",
        "    expected: a number >= 0",
    ]


def test_cancel_ends_a_run_waiting_for_workers(closing: list[dict[str, Any]]) -> None:
    # A cluster whose workers never come (a job queue that holds the jobs, say).
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "empty", "n_workers": 0}}
    closing.append(parallel)
    handle = Affine(ToyProvider(toy_config()), parallel=parallel).submit(range(4))
    wait_for(lambda: handle.session is not None, "the session start")
    handle.cancel()
    result = handle.result(timeout=10)
    assert result.status is RunStatus.CANCELLED
