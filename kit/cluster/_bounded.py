"""A call waited for in steps: given up on when the run is cancelled or a time bound passes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kit._base.errors import ProviderSetupError
from kit._base.errors import SetupCancelled as SetupCancelled

T = TypeVar("T")

#: Seconds between checks for cancellation while an env is built.
SETUP_STEP = 0.1


def bounded(
    fn: Callable[[], T],
    should_stop: Callable[[], bool] | None,
    timeout: float | None,
    label: str,
    on_late: Callable[[T], None] | None = None,
) -> T:
    """Call ``fn`` on a helper thread; give up on cancellation or after ``timeout`` s.

    A call given up on goes on in the background; ``on_late`` gets its result
    if it ever ends, so nothing it built is kept. With neither bound, ``fn``
    runs on this thread: there is nothing to give up on.

    Examples
    --------
    >>> bounded(lambda: 42, should_stop=lambda: False, timeout=60, label="answer")
    42
    >>> import threading
    >>> build = threading.Event()  # a build that waits until it is set
    >>> bounded(build.wait, should_stop=lambda: True, timeout=None, label="Model")
    Traceback (most recent call last):
    ...
    kit.errors.SetupCancelled: Model: the run was cancelled while its env was built
    >>> build.set()
    """
    if should_stop is None and timeout is None:
        return fn()
    lock = threading.Lock()
    box: dict[str, Any] = {}
    done = threading.Event()

    def call() -> None:
        try:
            value = fn()
        except BaseException as exc:
            with lock:
                box["error"] = exc
                done.set()
            return
        with lock:
            late = box.get("abandoned", False)
            box["value"] = value
            done.set()
        if late and on_late is not None:
            on_late(value)

    threading.Thread(target=call, name=f"kit-setup-{label}", daemon=True).start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(SETUP_STEP):
        stop = should_stop is not None and should_stop()
        if stop or (deadline is not None and time.monotonic() >= deadline):
            with lock:
                if done.is_set():
                    break
                box["abandoned"] = True
            if stop:
                raise SetupCancelled(f"{label}: the run was cancelled while its env was built")
            raise ProviderSetupError(
                f"{label}: building the env took longer than {timeout:g} s "
                "(runner.setup_timeout); the build goes on in the background and its env "
                "is released when it ends. Check what the provider's setup waits for (a "
                "download, a lock, a device), or raise runner.setup_timeout"
            )
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
