"""Run one chunk of items through ``forward``: the same code inline and on workers."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kit._engine.exit_guard import ProcessExitCalled, exit_guard
from kit._engine.inject import ForwardSpec
from kit._engine.overdue import WATCH
from kit.result import Index, ItemError
from kit.store._chunk_result import ChunkResult


@dataclass(frozen=True)
class BatchBy:
    """Batch items of similar size under a budget (``runner.batch_by``, ``runner.max_batch``).

    ``size`` is the runner's static method named by ``batch_by``, called as
    ``size(idx, **env)`` once per item of a chunk; ``spec`` says which env
    entries it takes.
    """

    size: Callable[..., float]
    spec: ForwardSpec
    budget: float


#: A batch's largest item is at most this many times its smallest.
SIZE_SPREAD = 2.0


def size_batches(
    sizes: Sequence[float], budget: float, max_items: int | None = None
) -> list[list[int]]:
    """Group positions into batches of similar size whose sizes add up to at most ``budget``.

    Positions are taken smallest first; a batch closes when the next item would
    pass the budget, hold ``max_items``, or be more than ``SIZE_SPREAD`` times
    the batch's smallest item, so a 1 s and a 30 s utterance never share a
    batch. An item larger than the budget goes alone.

    Examples
    --------
    >>> size_batches([1.0, 30.0, 1.2, 2.5, 0.9], budget=4.0)
    [[4, 0, 2], [3], [1]]
    >>> size_batches([1.0, 1.0, 1.0], budget=10.0, max_items=2)
    [[0, 1], [2]]
    """
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0.0
    for j in sorted(range(len(sizes)), key=lambda j: sizes[j]):
        size = sizes[j]
        if current and (
            total + size > budget
            or size > SIZE_SPREAD * sizes[current[0]]
            or (max_items is not None and len(current) >= max_items)
        ):
            batches.append(current)
            current, total = [], 0.0
        current.append(j)
        total += size
    if current:
        batches.append(current)
    return batches


#: What ``forward`` may raise and fail only its items: ``sys.exit()`` and
#: ``os._exit()`` (see :mod:`kit._engine.exit_guard`) in forward must not end the worker
#: or the notebook's kernel that runs it.
ITEM_FAILURES = (Exception, SystemExit, ProcessExitCalled)


def item_error(index: Index, position: int, exc: BaseException, worker: str) -> ItemError:
    """Describe a failure of ``forward`` on one item; ``sys.exit`` is named as such.

    Examples
    --------
    >>> item_error(4, 0, SystemExit(3), "0").message
    'forward called sys.exit(3)'
    >>> item_error(4, 0, ProcessExitCalled(1), "0").message
    'forward called os._exit(1)'
    """
    error = ItemError.from_exception(index, position, exc, worker)
    if isinstance(exc, SystemExit):
        return dataclasses.replace(error, message=f"forward called sys.exit({exc.code!r})")
    if isinstance(exc, ProcessExitCalled):
        return dataclasses.replace(error, message=f"forward called os._exit({exc.code!r})")
    return error


def execute_chunk(
    forward: Callable[..., Any],
    kwargs: dict[str, Any],
    indices: Sequence[Index],
    start: int,
    batch_size: int | None,
    worker: str,
    batch_by: BatchBy | None = None,
    env: Mapping[str, Any] | None = None,
    budget: float | None = None,
    notice: Callable[[int], None] | None = None,
) -> ChunkResult:
    """Call ``forward`` on every item (or batch) of ``indices``; record failures.

    With ``batch_by``, batches are made by :func:`size_batches` from each item's
    size (read with ``batch_by.size`` and the ``env``); an item whose size
    cannot be read fails alone.

    With a ``budget`` (seconds), an item (or batch) that alone runs longer
    than that ends the chunk (not with ``batch_by``, whose batches are not
    in order): it hands back the positions it ran, a prefix, so one slow
    item holds back none of the items behind it, which the driver plans
    again for other workers. Items that are each a little slower than
    expected (a corpus sorted by length) do not cut it. ``notice(end)`` is
    called (from another thread, see :mod:`kit._engine.overdue`) as soon as such an
    item passes the budget, while it still runs: the chunk will end at
    position ``end``, so the driver need not wait for the slow item to plan
    the rest. ``os._exit`` in ``forward`` fails its item (see
    :mod:`kit._engine.exit_guard`).

    Examples
    --------
    >>> chunk = execute_chunk(abs, {}, [-1, -2, -3], 0, None, "0", budget=0.0)
    >>> chunk.records, chunk.stop  # the first item ran over the budget
    ([1], 1)
    """
    cut = budget if batch_by is None else None
    watching = WATCH.chunk(notice, cut) if notice is not None and cut is not None else None
    # One frame between Dask's task and forward, not a decorator's: Dask's profiler
    # walks every running thread's stack 100 times a second.
    with exit_guard(), watching or contextlib.nullcontext() as watched:
        n = len(indices)
        records: list[Any] = [None] * n
        errors: list[ItemError] = []
        began = time.perf_counter()
        ran = n
        if batch_size is None and batch_by is None:
            for j, index in enumerate(indices):
                item_began = time.perf_counter()
                if watched is not None and j < n - 1:
                    watched.item(item_began, start + j + 1)
                try:
                    records[j] = forward(index, **kwargs)
                except ITEM_FAILURES as exc:
                    errors.append(item_error(index, start + j, exc, worker))
                if watched is not None:
                    watched.current = None
                if cut is not None and time.perf_counter() - item_began > cut:
                    ran = j + 1
                    break
        else:
            for batch in _batches(indices, start, batch_size, batch_by, env or {}, errors, worker):
                item_began = time.perf_counter()
                if watched is not None and batch[-1] < n - 1:
                    watched.item(item_began, start + batch[-1] + 1)
                items = [indices[j] for j in batch]
                try:
                    outputs = list(forward(items, **kwargs))
                    if len(outputs) != len(batch):
                        raise ValueError(
                            f"forward returned {len(outputs)} results for a batch of "
                            f"{len(batch)} items; return one result per item"
                        )
                    for j, output in zip(batch, outputs, strict=True):
                        records[j] = output
                except ITEM_FAILURES as exc:
                    for j in batch:
                        errors.append(item_error(indices[j], start + j, exc, worker))
                if watched is not None:
                    watched.current = None
                if cut is not None and time.perf_counter() - item_began > cut:
                    ran = batch[-1] + 1
                    break
    busy = time.perf_counter() - began
    errors.sort(key=lambda e: e.position)
    del records[ran:]
    slot = (threading.get_ident(), began)
    return ChunkResult(start, records, errors, worker, busy, metric_sums(records), slot)


def _batches(
    indices: Sequence[Index],
    start: int,
    batch_size: int | None,
    batch_by: BatchBy | None,
    env: Mapping[str, Any],
    errors: list[ItemError],
    worker: str,
) -> list[list[int]]:
    """Positions in the chunk, grouped into the batches ``forward`` gets."""
    if batch_by is None:
        assert batch_size is not None
        n = len(indices)
        return [list(range(b, min(b + batch_size, n))) for b in range(0, n, batch_size)]
    kwargs = batch_by.spec.kwargs(env, {})
    sized: list[int] = []
    sizes: list[float] = []
    for j, index in enumerate(indices):
        try:
            sizes.append(float(batch_by.size(index, **kwargs)))
            sized.append(j)
        except ITEM_FAILURES as exc:
            errors.append(item_error(index, start + j, exc, worker))
    return [[sized[k] for k in batch] for batch in size_batches(sizes, batch_by.budget, batch_size)]


def metric_sums(records: Sequence[Any]) -> dict[str, tuple[float, int]]:
    """Sum the per-item metrics of ``records``: the convention views read.

    A record reports metrics when it is a dict with a ``"metrics"`` dict of
    numbers, e.g. ``{"hyp": "...", "metrics": {"wer": 0.25, "rtf": 0.1}}``.
    Other records, and values that are not numbers (or too large for a
    float, such as ``10**400``), are left out.

    Examples
    --------
    >>> metric_sums([{"metrics": {"wer": 0.5}}, {"metrics": {"wer": 0.0, "x": "no"}}, 3])
    {'wer': (0.5, 2)}
    >>> metric_sums([{"metrics": {"n": 10**400}}])
    {}
    """
    sums: dict[str, list[float]] = {}
    for record in records:
        if type(record) is not dict:
            continue
        metrics = record.get("metrics")
        if type(metrics) is not dict:
            continue
        for name, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                try:
                    number = float(value)
                except OverflowError:
                    continue
                total = sums.setdefault(str(name), [0.0, 0])
                total[0] += number
                total[1] += 1
    return {name: (total, int(count)) for name, (total, count) in sums.items()}
