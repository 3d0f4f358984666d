"""The Dask task of a run's chunk: on a worker, take its env and run the chunk's items.

The engine's side of the worker; the env it injects is the cluster's (the
provider plugin, :mod:`kit.cluster._plugin`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from distributed import get_worker

from kit._engine.chunk import BatchBy, execute_chunk
from kit._engine.inject import ForwardSpec
from kit.cluster._plugin import worker_env
from kit.result import Index
from kit.store._chunk_result import ChunkResult, drop_unpicklable


def run_chunk(
    indices: Sequence[Index],
    start: int,
    budget: float | None = None,
    *,
    forward: Callable[..., Any],
    env_name: str,
    forward_spec: ForwardSpec,
    explicit: Mapping[str, Any],
    batch: int | None,
    batch_by: BatchBy | None = None,
    overdue_topic: str | None = None,
) -> ChunkResult:
    """Run positions ``start...`` on this worker with its env injected (the Dask task).

    What varies between a run's chunks comes first, so that ``client.map``
    sends many at once; the rest is keywords (``batch`` is the runner's
    ``batch_size``: ``client.map`` keeps that name for itself). Past its
    ``budget`` in seconds, the chunk hands back the items it has not started (see
    :func:`~kit._engine.chunk.execute_chunk`); the moment an item passes it, an event
    on ``overdue_topic`` tells the driver, with this task's key and the
    position where the chunk will end.
    """
    worker = get_worker()
    env = worker_env(env_name)
    kwargs = forward_spec.kwargs(env, explicit)
    notice = None
    if overdue_topic is not None and budget is not None:
        notice = functools.partial(tell_overdue, worker, overdue_topic, worker.get_current_task())
    chunk = execute_chunk(
        forward, kwargs, indices, start, batch, str(worker.name), batch_by, env, budget, notice
    )
    return drop_unpicklable(chunk, indices)


def tell_overdue(worker: Any, topic: str, key: Any, end: int) -> None:
    """Tell the driver that the chunk task ``key`` will end at position ``end``."""
    worker.log_event(topic, {"key": str(key), "end": end})
