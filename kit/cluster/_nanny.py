"""The nanny of Kit's local workers: Dask's own, without its malloc trim threshold.

And Dask's background sampling turned down on Kit's local clusters; before a
cluster Kit started closes, a wait for the workers nannies are restarting and
quiet for the items the close ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import dask.config
from distributed import Nanny
from distributed.core import Status

from kit.cluster._knocks import PRELOAD
from kit.cluster._process import alive

#: Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` so freed memory
#: goes back to the system sooner. Setting it also turns off glibc's dynamic mmap
#: threshold, so every allocation above 128 KiB becomes a fresh mmap and page faults:
#: per-item arrays (Whisper's 1 MB feature windows) then cost that on every item.
#: Measured here: Whisper decoding 22% slower in processes started with it.
TRIM = "MALLOC_TRIM_THRESHOLD_"


#: Dask's settings that sample in the background, with their shipped values and
#: Kit's. On a local cluster the workers, the scheduler and the driver share the
#: machine's cores, so what they sample is taken from the items: idle, a 2-worker
#: cluster used 11% of a core, 4% with these (measured with psutil here). The
#: statistical profiler walks each worker's stack 100 times a second for the Dask
#: dashboard's Profile page; every server checks its event loop 50 times a second.
LIGHT_SAMPLING: dict[str, tuple[Any, Any]] = {
    "distributed.worker.profile.enabled": (True, False),
    "distributed.admin.tick.interval": ("20ms", "500ms"),
}


def light_sampling_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Kit's values for the :data:`LIGHT_SAMPLING` settings nobody chose.

    A setting is chosen when it holds another value than Dask's shipped one, or
    when a Dask config file or a ``DASK_*`` variable (of ``env``, by default
    ``os.environ``) names it: ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=True``
    keeps Dask's profiler on.

    Examples
    --------
    >>> import dask.config
    >>> light_sampling_settings(env={})["distributed.worker.profile.enabled"]
    False
    >>> with dask.config.set({"distributed.admin.tick.interval": "10ms"}):
    ...     sorted(light_sampling_settings(env={"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "1"}))
    []
    """
    named = dask.config.collect(env=os.environ if env is None else env)
    settings = {}
    for key, (shipped, ours) in LIGHT_SAMPLING.items():
        if (
            dask.config.get(key, None) == shipped
            and dask.config.get(key, None, config=named) is None
        ):
            settings[key] = ours
    return settings


@contextlib.contextmanager
def light_sampling() -> Iterator[None]:
    """Give the Dask servers made in this block :func:`light_sampling_settings`.

    That is the scheduler and nannies made here, and the workers those nannies start.
    """
    with dask.config.set(light_sampling_settings()):
        yield


class KitNanny(Nanny):
    """A ``distributed.Nanny`` that leaves glibc's malloc defaults to its worker.

    A ``MALLOC_TRIM_THRESHOLD_`` in the environment is kept: whoever set it chose it.
    Its worker, and the nanny itself, take :func:`light_sampling_settings`, also when the
    cluster adds it later (elastic scaling, a replaced worker); its worker preloads
    :mod:`kit.cluster._knocks`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["preload"] = with_knocks_quiet(kwargs.get("preload"))
        with light_sampling():  # the nanny hands its config, read now, to its worker's process
            super().__init__(*args, **kwargs)
        if TRIM not in os.environ:
            self.pre_spawn_env.pop(TRIM, None)
            self.env.pop(TRIM, None)


def with_knocks_quiet(preload: str | list[str] | None) -> list[str]:
    """Return a worker's preloads (``preload``, else Dask's) and :mod:`kit.cluster._knocks`.

    Its worker then refuses strangers quietly, as the process holding the nanny does.

    Examples
    --------
    >>> with_knocks_quiet("mine")  # one module, as a user's `options.preload` may name it
    ['mine', 'kit.cluster._knocks']
    >>> with_knocks_quiet(["mine", "kit.cluster._knocks"])
    ['mine', 'kit.cluster._knocks']
    """
    if preload is None:
        preload = dask.config.get("distributed.worker.preload")
    modules = [preload] if isinstance(preload, str) else list(preload or [])
    return modules if PRELOAD in modules else [*modules, PRELOAD]


#: How long closing a session waits for workers that their nannies are restarting.
RESTART_GRACE = 30.0


def restarting(cluster: Any) -> list[str]:
    """Names of ``cluster``'s workers whose process died and is not yet replaced.

    Only nannies in this process are seen (a ``LocalCluster``'s); other
    clusters give ``[]``. A worker that died is restarted by its nanny, and
    closing the nanny while it starts the new process fails inside
    distributed ("can only join a started process").

    Examples
    --------
    >>> restarting(None)
    []
    """
    names = []
    for name, nanny in list(getattr(cluster, "workers", {}).items()):
        if not isinstance(nanny, Nanny) or nanny.status != Status.running:
            continue
        worker = nanny.process
        if worker is None:
            continue
        process = worker.process  # released once the exit is handled
        if worker.status != Status.running or process is None or not alive(process.pid):
            names.append(str(name))
    return names


def wait_for_restarts(cluster: Any, timeout: float = RESTART_GRACE) -> list[str]:
    """Wait up to ``timeout`` s for :func:`restarting` to be empty; return what still restarts."""
    deadline = time.monotonic() + timeout
    while (names := restarting(cluster)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return names


#: What distributed logs, as a WARNING, when closing a worker ends a task still running
#: in its thread: the worker's words, and its nanny's once it kills a worker still busy.
WORKER_LOG, WORKER_WORDS = "distributed.worker.state_machine", "ended with CancelledError"
NANNY_LOG, NANNY_WORDS = "distributed.nanny", "Worker process still alive after"
#: What a worker logs, as an ERROR, when its heartbeat finds the scheduler gone: closing a
#: cluster stops the scheduler while a busy machine has not yet closed every worker.
HEARTBEAT_LOG, HEARTBEAT_WORDS = (
    "distributed.worker",
    "Failed to communicate with scheduler during heartbeat",
)


class _EndedByClose(logging.Filter):
    """Drop a warning for a task that closing its worker ends."""

    def __init__(self, words: str) -> None:
        super().__init__()
        self.words = words

    def filter(self, record: logging.LogRecord) -> bool:
        return self.words not in record.getMessage()


def quiet_worker_for_close() -> None:
    """On a worker Kit is about to close: drop the warning for a task the close ends.

    Kit cancels the copy of a chunk that lost to its twin (a backup, or the
    chunk its backup beat), but a task running in a worker's thread cannot be
    stopped: closing the worker ends it, and distributed warns of it, after
    the run and its results are done. Nor does it report a heartbeat that
    finds the scheduler closed first (on a busy machine the scheduler may stop
    before every worker has). Run on the workers of a cluster Kit started,
    just before Kit closes it (with ``client.run``).

    Examples
    --------
    >>> quiet_worker_for_close()
    >>> record = logging.makeLogRecord(
    ...     {"msg": "Failed to communicate with scheduler during heartbeat."})
    >>> bool(logging.getLogger(HEARTBEAT_LOG).filter(record))
    False
    >>> for name in (WORKER_LOG, HEARTBEAT_LOG):  # this process is no worker: as it was
    ...     logging.getLogger(name).filters.clear()
    """
    logging.getLogger(WORKER_LOG).addFilter(_EndedByClose(WORKER_WORDS))
    logging.getLogger(HEARTBEAT_LOG).addFilter(_EndedByClose(HEARTBEAT_WORDS))


@contextlib.contextmanager
def quiet_nannies() -> Iterator[None]:
    """While a cluster Kit started closes, drop its nannies' warning for a worker still busy.

    The nanny kills such a worker after a few seconds; what it ran was a task
    whose run is over (see :func:`quiet_worker_for_close`).

    Examples
    --------
    >>> logger = logging.getLogger("distributed.nanny")
    >>> record = logging.makeLogRecord({"msg": "Worker process still alive after 4.0 seconds"})
    >>> with quiet_nannies():
    ...     bool(logger.filter(record))
    False
    >>> bool(logger.filter(record))
    True
    """
    logger = logging.getLogger(NANNY_LOG)
    quiet = _EndedByClose(NANNY_WORDS)
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
