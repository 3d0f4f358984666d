"""Sessions: their state, ``with``, and the inline envs they tear down when closed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from distributed import Client

import kit
from kit.cluster._session import SessionState, session_for_client
from tests.workloads import Affine, ToyProvider, lines, mark_then_sleep, toy_config


class Released(ToyProvider):
    """Releases its env its own way: a line in ``released.log``, not the model's ``close``."""

    def teardown_env(self, env: dict[str, Any]) -> None:
        Path(self.config.log_dir, "released.log").write_text(f"{env['model'].factor}\n")


class Stuck(ToyProvider):
    def teardown_env(self, env: dict[str, Any]) -> None:
        raise OSError("device busy")


def inline(max_envs: int) -> dict[str, Any]:
    # A max_envs of its own: a session no other test shares.
    return {"env": "inline", "max_envs": max_envs}


def test_closing_a_session_tears_its_inline_envs_down_with_the_providers_teardown_env(
    tmp_path: Path,
) -> None:
    with kit.get_session(inline(91)) as session:
        Affine(Released(toy_config(tmp_path, factor=7)), parallel=inline(91)).run(range(2))
        assert session.state is SessionState.OPEN and not (tmp_path / "released.log").exists()
    assert lines(tmp_path, "released.log") == ["7"]
    assert session.state is SessionState.CLOSED and session.closed
    assert session not in kit.cluster.sessions() and session.local_envs == {}


def test_an_inline_env_idle_past_its_timeout_goes_at_the_next_attach(tmp_path: Path) -> None:
    parallel = {**inline(92), "env_idle_timeout": 0}
    with kit.get_session(parallel) as session:
        Affine(Released(toy_config(tmp_path, factor=7)), parallel=parallel).run(range(2))
        assert not (tmp_path / "released.log").exists()  # max_envs is far away
        Affine(ToyProvider(toy_config(tmp_path, factor=8)), parallel=parallel).run(range(2))
        assert lines(tmp_path, "released.log") == ["7"]
        assert [env["model"].factor for env in session.local_envs.values()] == [8]


def test_a_failing_teardown_on_close_warns_and_the_session_closes(tmp_path: Path) -> None:
    session = kit.get_session(inline(92))
    Affine(Stuck(toy_config(tmp_path)), parallel=inline(92)).run(range(2))
    with pytest.warns(RuntimeWarning, match=r"Stuck: tearing down its env failed \(OSError"):
        session.close()
    assert session.state is SessionState.CLOSED


def test_a_session_whose_client_was_closed_is_lost(local: dict[str, Any]) -> None:
    with Client(kit.get_session(local).cluster) as client:
        session = session_for_client(client)
        assert session.state is SessionState.OPEN
    assert session.state is SessionState.LOST and session.closed
    session.close()
    assert session.state is SessionState.CLOSED


def test_closing_a_cluster_kit_started_says_nothing_of_a_cancelled_task_still_running(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # As the losing copy of a chunk (a backup, or the chunk its backup beat) is at the end
    # of `make demo`: cancelled, but a running task cannot be stopped, so the close ends it.
    marker = tmp_path / "running"
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "closes-busy"}}
    session = kit.get_session(parallel)
    try:
        future = session.client.submit(mark_then_sleep, str(marker), 6.0, pure=False)
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert time.monotonic() < deadline, "the task never started"
            time.sleep(0.05)
        session.client.cancel([future])
    finally:
        session.close()
    err = capfd.readouterr().err
    assert "ended with CancelledError" not in err  # the worker's words
    assert "still alive after" not in err  # its nanny's, killing it 4 s into the close
