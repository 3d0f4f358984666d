"""Every way a run ends: one final status, one RunFinished, the original error, no thread left."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

import kit
import kit.rl
from kit import ConfigError, RunError, RunStatus
from kit.dashboard import Dashboard
from kit.errors import ProviderSetupError
from kit.events import Event, RunFinished, RunStarted
from tests.workloads import Affine, Interrupted, MistypedProvider, ToyProvider, toy_config

LOCAL = {"env": "local", "n_workers": 2}


@dataclass
class Case:
    name: str
    runner: Any
    status: RunStatus
    raises: type[BaseException] | None = None
    message: str = ""
    cancel: bool = False
    kwargs: dict[str, Any] | None = None


def cases(parallel: dict[str, Any] | None) -> list[Case]:
    return [
        Case(
            "completed", Affine(ToyProvider(toy_config()), parallel=parallel), RunStatus.COMPLETED
        ),
        Case(
            "cancelled",
            Affine(ToyProvider(toy_config(sleep=0.02)), parallel=parallel),
            RunStatus.CANCELLED,
            cancel=True,
        ),
        Case(
            "max_failures",
            Affine(
                ToyProvider(toy_config(fail_on=list(range(0, 60, 3)))),
                parallel=parallel,
                max_failures=2,
                chunk_size=4,
            ),
            RunStatus.STOPPED,
            RunError,
            "items failed (max_failures=2)",
        ),
        Case(
            "on_error_raise",
            Affine(
                ToyProvider(toy_config(fail_on=[5])),
                parallel=parallel,
                on_error="raise",
                chunk_size=2,
            ),
            RunStatus.STOPPED,
            RunError,
            "item 5 failed (on_error='raise')",
        ),
        Case(
            "setup_error",
            Affine(ToyProvider(toy_config(fail_setup=True)), parallel=parallel),
            RunStatus.ERROR,
            ProviderSetupError if parallel else RuntimeError,
            "model file is corrupt",
        ),
        Case(
            "config_error",
            Affine(MistypedProvider({"mode": "gramar"}), parallel=parallel),
            RunStatus.ERROR,
            ConfigError,
            "decoder.mode: 'gramar' is not a valid choice; did you mean 'grammar'?",
        ),
        Case(
            "unknown_keyword",
            Affine(ToyProvider(toy_config()), parallel=parallel),
            RunStatus.ERROR,
            TypeError,
            "nope",
            kwargs={"nope": 1},
        ),
    ]


def cancel_once_started(handle: Any) -> None:
    while handle.progress.done == 0 and not handle.done():
        time.sleep(0.01)
    handle.cancel()


def kit_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Kit's threads alive now that were not before (other tests may hold their own)."""
    return [t for t in threading.enumerate() if t.name.startswith("kit-") and t not in before]


def end(case: Case, inline: bool) -> tuple[Any, list[Event], list[tuple[str, bool]], Dashboard]:
    events: list[Event] = []

    handle = case.runner.prepare(range(60), on_event=events.append, **(case.kwargs or {}))
    dashboard = Dashboard(interval=0.05).follow(handle)
    calls: list[tuple[str, bool]] = []
    handle.add_done_callback(lambda h: calls.append(("before", h.exception() is not None)))
    canceller = threading.Thread(target=cancel_once_started, args=(handle,))
    if case.cancel:
        canceller.start()
    if inline:
        handle.drive()
    else:
        handle.start()
    handle.exception(timeout=120)
    if case.cancel:
        canceller.join(30)
    handle.add_done_callback(lambda h: calls.append(("after", h.done())))
    handle.join(30)
    return handle, events, calls, dashboard


@pytest.mark.parametrize("mode", ["inline", "local"])
@pytest.mark.parametrize("name", [c.name for c in cases(None)])
def test_every_end_has_one_final_status_and_the_original_error(mode: str, name: str) -> None:
    parallel = None if mode == "inline" else LOCAL
    case = next(c for c in cases(parallel) if c.name == name)
    before = set(threading.enumerate())
    handle, events, calls, dashboard = end(case, inline=mode == "inline")

    finished = [e for e in events if isinstance(e, RunFinished)]
    assert len(finished) == 1 and finished[0].status is case.status
    assert handle.status is case.status and handle.done()
    if case.raises is None:
        result = handle.result()
        assert result.status is case.status
        assert finished[0].error is None
    else:
        with pytest.raises(case.raises) as info:
            handle.result()
        assert case.message in str(info.value)
        assert "AssertionError" not in repr(info.value)
        if case.status is RunStatus.ERROR:
            assert case.message in (finished[0].error or "")
        with pytest.raises(case.raises):  # iterating ends the same way
            list(handle)
    # Callbacks run once each, after the result was set; one added late runs at once.
    assert calls == [("before", case.raises is not None), ("after", True)]
    assert dashboard.state.status == case.status.value
    if dashboard._thread is not None:
        dashboard._thread.join(10)  # it ends on its own at the final status
    assert kit_threads(before) == [], kit_threads(before)


def test_ctrl_c_inside_an_inline_run_cancels_it_and_is_raised_again() -> None:
    events: list[Event] = []
    runner = Interrupted(ToyProvider(toy_config()), chunk_size=1)
    with pytest.raises(KeyboardInterrupt):
        runner.run(range(10), on_event=events.append, at=3)
    assert isinstance(events[0], RunStarted)
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert len(finished) == 1 and finished[0].status is RunStatus.CANCELLED
    assert finished[0].done == 3


def test_a_run_that_fails_before_it_starts_emits_only_run_finished() -> None:
    events: list[Event] = []
    handle = Affine(ToyProvider(toy_config(fail_setup=True)), parallel=LOCAL).submit(
        range(5), on_event=events.append
    )
    with pytest.raises(ProviderSetupError, match="model file is corrupt"):
        handle.result(timeout=120)
    assert not any(isinstance(e, RunStarted) for e in events)
    assert [e.status for e in events if isinstance(e, RunFinished)] == [RunStatus.ERROR]
    assert handle.progress.total == 5 and handle.progress.status is RunStatus.ERROR


def test_result_from_an_event_subscriber_says_it_would_wait_for_itself() -> None:
    seen: list[str] = []
    handle: Any = None

    def impatient(event: Event) -> None:
        if isinstance(event, RunStarted):
            try:
                handle.result()
            except RuntimeError as exc:
                seen.append(str(exc))

    handle = Affine(ToyProvider(toy_config())).prepare(range(3), on_event=impatient)
    handle.start().result(timeout=60)
    assert seen and "would wait for itself" in seen[0]


def test_kit_errors_share_one_base_and_keep_their_builtins() -> None:
    assert issubclass(ConfigError, kit.KitError) and issubclass(ConfigError, ValueError)
    for error in (RunError, ProviderSetupError, kit.errors.StoreError):
        assert issubclass(error, kit.KitError) and issubclass(error, RuntimeError)
    # Every error class kit and kit.rl export, with the builtin docs/providers.md's table gives it.
    builtins = {
        "ClusterError": RuntimeError,
        "NoWorkersError": TimeoutError,
        "SchedulerUnreachableError": ConnectionError,
        "SchedulerLostError": ConnectionError,
        "DriverLostError": RuntimeError,
        "EnvPoolError": RuntimeError,
        "ClosedPoolError": RuntimeError,
        "AlreadyPendingError": RuntimeError,
        "NothingPendingError": RuntimeError,
    }
    for module in (kit, kit.rl):
        for name in module.__all__:
            error = getattr(module, name)
            if isinstance(error, type) and issubclass(error, Exception):
                if issubclass(error, Warning):
                    continue
                assert issubclass(error, kit.KitError), name
                # Tracebacks name it where it is imported from, not a private module.
                assert error.__module__ == module.__name__, name
                assert issubclass(error, builtins.get(name, Exception)), name
    for cluster_error in ("NoWorkersError", "SchedulerUnreachableError", "SchedulerLostError"):
        assert issubclass(getattr(kit.errors, cluster_error), kit.errors.ClusterError)
