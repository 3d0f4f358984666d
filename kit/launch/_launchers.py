"""Launchers: where an assembled run goes (this process, or a driver process of its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from kit._engine import RunHandle
from kit.events import Subscriber
from kit.launch._assemble import assemble
from kit.launch._detached import start_driver
from kit.launch._request import RunRequest
from kit.result import RunResult

if TYPE_CHECKING:
    from kit.detached._run import DetachedRun


@overload
def launch(
    request: RunRequest, *, detached: Literal[False] = False, on_event: Subscriber | None = None
) -> RunHandle: ...


@overload
def launch(
    request: RunRequest, *, detached: Literal[True], on_event: Subscriber | None = None
) -> DetachedRun: ...


def launch(
    request: RunRequest, *, detached: bool = False, on_event: Subscriber | None = None
) -> RunHandle | DetachedRun:
    """Start ``request``'s run in the background; return its handle at once.

    In this process (a thread of its own), or with ``detached=True`` in a
    driver process that outlives this one: it needs ``output_dir``, where
    the returned :class:`kit.detached.DetachedRun` reads its progress.
    """
    if detached:
        if on_event is not None:
            raise ValueError("on_event cannot follow a detached run; read kit.attach(...)")
        return start_driver(request)
    return assemble(request, on_event).start()


def run(request: RunRequest, on_event: Subscriber | None = None) -> RunResult:
    """Run ``request``'s run and wait for its result; Ctrl-C cancels it, keeping what is done.

    An inline run is driven on this thread, so a debugger stops inside
    ``forward``; any other on a thread of its own.

    Raises
    ------
    RunError
        When ``on_error="raise"`` or ``max_failures`` stops the run.
    """
    handle = assemble(request, on_event)
    if handle.spec.inline:
        handle.drive()
        return handle.result()
    handle.start()
    try:
        return handle.result()
    except KeyboardInterrupt:
        handle.cancel()
        handle.join(timeout=30)
        raise
