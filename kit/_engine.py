"""The driver loop of a run: plan chunks, send them out, gather, store, emit events."""

from __future__ import annotations

import queue
import sys
import threading
import time
import uuid
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit._chunk import ChunkResult, execute_chunk
from kit._inject import ForwardSpec
from kit._plan import ChunkPlanner
from kit.events import ChunkFinished, EventLog, EventStream, RunFinished, RunStarted
from kit.provider import EnvironmentProvider
from kit.result import Index, ItemError, Progress, RunError, RunResult, RunStats, WorkerStats
from kit.session import Session
from kit.store import RunStore, indices_digest, indices_record

WAIT_STEP = 0.2  # seconds between checks for cancellation while waiting


@dataclass
class RunSpec:
    """Everything one run needs, fixed when it is submitted."""

    provider: EnvironmentProvider
    forward: Callable[..., Any]
    forward_spec: ForwardSpec
    explicit: Mapping[str, Any]
    indices: Sequence[Index]
    session: Session
    batch_size: int | None
    chunk_size: int | str
    on_error: str
    max_failures: int | None
    retries: int
    store: RunStore | None
    resume: bool
    runner_name: str
    summarize: Callable[[list[Any]], dict[str, Any]]
    config: DictConfig | None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])


class RunHandle:
    """A run in progress: watch it, iterate over its records, wait, or cancel.

    Returned by :meth:`kit.Runner.submit`; :meth:`kit.Runner.run` waits on one.

    Examples
    --------
    >>> from kit import Runner, EnvironmentProvider
    >>> class Env(EnvironmentProvider):
    ...     def build_env_local(self): return {}
    ...     def make_worker_setup_fn(self): return dict
    >>> class Square(Runner):
    ...     @staticmethod
    ...     def forward(idx):
    ...         return idx * idx
    >>> handle = Square(Env({})).submit(range(5))
    >>> handle.result(timeout=30).records
    [0, 1, 4, 9, 16]
    >>> handle.progress
    Progress(done=5, failed=0, total=5)
    >>> sorted(handle)
    [(0, 0), (1, 1), (2, 4), (3, 9), (4, 16)]
    """

    def __init__(self, spec: RunSpec, events: EventStream | None = None) -> None:
        self.spec = spec
        self.events = events or EventStream()
        total = len(spec.indices)
        self._records: list[Any] = [None] * total
        self._errors: dict[int, ItemError] = {}
        # One byte per position: exactly-once bookkeeping that stays small at 1M items.
        self._filled = bytearray(total)
        self._done = 0
        self._failed = 0
        self._resumed = 0
        self._workers: dict[str, WorkerStats] = {}
        self._chunks = 0
        # Positions of successful items in completion order, for iterating as they
        # come: 8 bytes each, the records themselves stay in _records only.
        self._stream = array("q")
        self._cond = threading.Condition()
        self._finished = threading.Event()
        self._cancel = threading.Event()
        self._stop_error: ItemError | None = None
        self._stop_reason: str | None = None
        self._result: RunResult | None = None
        self._exception: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._started = time.perf_counter()
        self._setup_seconds = 0.0
        self._done_callbacks: list[Callable[[RunHandle], None]] = []

    # ------------------------------------------------------------ public API
    @property
    def run_id(self) -> str:
        """Short id of this run (names its Dask tasks and events)."""
        return self.spec.run_id

    @property
    def progress(self) -> Progress:
        """Items finished (ok or failed), failed, and total, right now."""
        with self._cond:
            return Progress(self._done, self._failed, len(self.spec.indices))

    def done(self) -> bool:
        """Whether the run has ended (completed, cancelled, stopped or failed)."""
        return self._finished.is_set()

    def cancel(self) -> None:
        """Stop the run: pending chunks are cancelled, completed ones kept.

        ``result()`` then returns the partial result with status
        ``"cancelled"``; a later run into the same output_dir resumes.
        """
        self._cancel.set()

    def result(self, timeout: float | None = None) -> RunResult:
        """Wait for the run to end and return its result.

        Raises
        ------
        TimeoutError
            If it has not ended within ``timeout`` seconds.
        RunError
            If it stopped early (``on_error="raise"`` or ``max_failures``);
            the partial result is ``error.result``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._finished.wait(WAIT_STEP):
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"run {self.run_id} has not finished after {timeout} s")
        if self._exception is not None:
            raise self._exception
        assert self._result is not None
        return self._result

    def add_done_callback(self, callback: Callable[[RunHandle], None]) -> None:
        """Call ``callback(handle)`` once the run has ended (at once if it has).

        It runs on the engine's thread; an exception in it is printed, not raised.
        """
        with self._cond:
            if not self._finished.is_set():
                self._done_callbacks.append(callback)
                return
        _call_quietly(callback, self)

    def __iter__(self) -> Iterator[tuple[Index, Any]]:
        """Yield ``(index, record)`` for every successful item, as items complete."""
        cursor = 0
        indices, records = self.spec.indices, self._records
        while True:
            with self._cond:
                while cursor >= len(self._stream) and not self._finished.is_set():
                    self._cond.wait(WAIT_STEP)
                batch = self._stream[cursor:]
                finished = self._finished.is_set()
            for pos in batch:
                yield indices[pos], records[pos]
            cursor += len(batch)
            if finished and cursor >= len(self._stream):
                return

    def __repr__(self) -> str:
        p = self.progress
        state = "done" if self.done() else "running"
        return f"<RunHandle {self.run_id} {state}: {p.done}/{p.total} items, {p.failed} failed>"

    # ------------------------------------------------------------ driving
    def start_background(self) -> None:
        """Drive the run on a daemon thread."""
        self._thread = threading.Thread(
            target=self._drive_catching, name=f"kit-run-{self.run_id}", daemon=True
        )
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the driving thread to end."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _drive_catching(self) -> None:
        try:
            self.drive()
        except BaseException as exc:
            self._exception = exc
            self._finish_signal()

    def drive(self) -> None:
        """Run to the end on the calling thread (inline ``run()`` uses this directly)."""
        spec = self.spec
        try:
            setup_began = time.perf_counter()
            env_name, env_keys = spec.session.attach(spec.provider)
            spec.forward_spec.check(env_keys, spec.explicit)
            pending = self._load_stored()
            n_workers = spec.session.threads_at_attach
            self._setup_seconds = time.perf_counter() - setup_began
            self.events.emit(
                RunStarted(
                    self.run_id,
                    len(spec.indices),
                    self._resumed,
                    n_workers,
                    spec.session.dashboard_link,
                    time.time(),
                )
            )
            planner = ChunkPlanner(pending, n_workers, spec.chunk_size, spec.batch_size)
            if spec.session.client is None:
                self._drive_inline(planner, spec.session.local_envs[env_name])
            else:
                self._drive_dask(planner, env_name, n_workers)
            self._conclude()
        finally:
            if spec.store is not None:
                spec.store.unlock()
            self._finish_signal()

    def _finish_signal(self) -> None:
        with self._cond:
            self._finished.set()
            self._cond.notify_all()
            callbacks, self._done_callbacks = self._done_callbacks, []
        for callback in callbacks:
            _call_quietly(callback, self)

    def _load_stored(self) -> list[tuple[int, int]]:
        spec = self.spec
        total = len(spec.indices)
        if spec.store is None:
            return [(0, total)]
        manifest = {
            "format": 1,
            "config_hash": _config_hash(spec.config),
            "provider": _qualname(type(spec.provider)),
            "runner": spec.runner_name,
            "batch_size": spec.batch_size,
            "chunk_size": spec.chunk_size,
            "n_items": total,
            "indices_digest": indices_digest(spec.indices),
            "indices": indices_record(spec.indices),
        }
        spec.store.lock()
        stored = spec.store.begin(manifest, spec.config, spec.resume)
        self.events.subscribe(EventLog(spec.store.path / "events.jsonl"))
        pending: list[tuple[int, int]] = []
        cursor = 0
        for chunk in stored:
            if chunk.stop > total:
                continue
            if chunk.start > cursor:
                pending.append((cursor, chunk.start))
            self._accept(chunk, resumed=True)
            cursor = chunk.stop
        if cursor < total:
            pending.append((cursor, total))
        # Start errors.jsonl from what is stored; this run's chunks append to it.
        spec.store.write_errors(self._sorted_errors())
        return pending

    def _drive_inline(self, planner: ChunkPlanner, env: dict[str, Any]) -> None:
        spec = self.spec
        kwargs = spec.forward_spec.kwargs(env, spec.explicit)
        while not self._should_stop():
            span = planner.next()
            if span is None:
                return
            start, stop = span
            chunk = execute_chunk(
                spec.forward, kwargs, spec.indices[start:stop], start, spec.batch_size, "driver"
            )
            planner.observe(len(chunk.records), chunk.busy_seconds)
            self._complete(chunk)

    def _drive_dask(self, planner: ChunkPlanner, env_name: str, n_workers: int) -> None:
        from kit._plugin import run_chunk

        spec = self.spec
        client = spec.session.client
        arrived: queue.Queue[Any] = queue.Queue()
        in_flight: dict[str, tuple[int, int, int, bool, Any]] = {}
        capacity = 2 * n_workers
        # Chunks lost with a worker run again alone, so a chunk that kills its
        # worker cannot take innocent chunks down with it (see _on_lost).
        isolated: deque[tuple[int, int, int]] = deque()

        # At the end of a run, a chunk may wait queued behind a long one on a busy worker
        # while another worker idles. Backups: once nothing is left to plan, each chunk
        # found queued while a worker idles is sent once more (dask gives the copy to the
        # idle worker); the first copy back wins, the other is cancelled. Results are kept
        # exactly once by position, so a copy that finishes anyway changes nothing.
        twins: dict[tuple[int, int], list[str]] = {}

        def launch(start: int, stop: int, attempt: int, alone: bool, backup: bool = False) -> None:
            future = client.submit(
                run_chunk,
                spec.forward,
                env_name,
                spec.forward_spec,
                spec.explicit,
                # A range stays a range: a few bytes to ship whatever the chunk's size.
                spec.indices[start:stop],
                start,
                spec.batch_size,
                key=f"kit-{self.run_id}-{start}-{stop}-{attempt}-{int(alone)}{'-b' * backup}",
                pure=False,
            )
            in_flight[future.key] = (start, stop, attempt, alone, future)
            twins.setdefault((start, stop), []).append(future.key)
            future.add_done_callback(arrived.put)

        def back_up() -> None:
            # Only chunks queued behind another one, and only while a worker idles: a
            # copy of a chunk already running would only waste a worker (a running task
            # cannot be stopped) into the next run.
            try:
                processing: dict[str, list[str]] = client.processing()
            except Exception:
                return
            idle = sum(1 for keys in processing.values() if not keys)
            if not idle:
                return
            order = {key: i for i, key in enumerate(in_flight)}
            queued: list[str] = []
            for keys in processing.values():
                ours = sorted((str(k) for k in keys if str(k) in order), key=order.__getitem__)
                queued.extend(ours[1:])  # a worker runs its chunks in the order sent
            for key in sorted(queued, key=order.__getitem__)[:idle]:
                start, stop, attempt, alone, _ = in_flight[key]
                if not alone and len(twins[(start, stop)]) == 1:
                    launch(start, stop, attempt, alone, backup=True)

        def settle(key: str) -> bool:
            """Forget ``key`` (it came back); return True if its twin is still out."""
            start, stop = in_flight[key][:2]
            del in_flight[key]
            keys = twins[(start, stop)]
            keys.remove(key)
            if not keys:
                del twins[(start, stop)]
            return bool(keys)

        def drop_twins(start: int, stop: int) -> None:
            for key in twins.pop((start, stop), []):
                client.cancel([in_flight.pop(key)[4]])

        planned_all = False
        arrival = False
        try:
            while True:
                if isolated:
                    if not in_flight and not self._should_stop():
                        launch(*isolated.popleft(), alone=True)
                else:
                    while not planned_all and not self._should_stop() and len(in_flight) < capacity:
                        span = planner.next()
                        if span is None:
                            planned_all = True
                            break
                        launch(span[0], span[1], 0, alone=False)
                    if planned_all and arrival and not self._should_stop():
                        back_up()
                arrival = False
                if not in_flight or self._should_stop():
                    return
                try:
                    future = arrived.get(timeout=WAIT_STEP)
                except queue.Empty:
                    continue
                entry = in_flight.get(future.key)
                if entry is None:
                    continue  # a cancelled twin
                arrival = True
                start, stop, attempt, alone, _ = entry
                twin_out = settle(future.key)
                failure: BaseException | None = None
                if future.status == "finished":
                    try:
                        chunk = future.result()
                    except Exception as exc:  # lost between finishing and gathering
                        failure = exc
                    else:
                        drop_twins(start, stop)
                        planner.observe(len(chunk.records), chunk.busy_seconds)
                        self._complete(chunk)
                        continue
                elif future.status == "error":
                    failure = future.exception()
                if not twin_out:
                    self._on_lost(isolated, start, stop, attempt, alone, failure)
                del future
        finally:
            if in_flight:
                client.cancel([entry[4] for entry in in_flight.values()])

    def _on_lost(
        self,
        isolated: deque[tuple[int, int, int]],
        start: int,
        stop: int,
        attempt: int,
        alone: bool,
        exc: BaseException | None,
    ) -> None:
        """Decide what to do with a chunk whose task failed (its worker died, say).

        A chunk that failed beside others may be a bystander: run it again
        alone. One that fails alone is split in halves, each run alone, until
        the item that kills its worker is found; that item gets ``retries``
        more attempts, then is recorded as failed. Every other item runs.
        """
        if not alone:
            isolated.append((start, stop, attempt))
        elif stop - start > 1:
            middle = (start + stop) // 2
            isolated.extend([(start, middle, attempt), (middle, stop, attempt)])
        elif attempt < self.spec.retries:
            isolated.append((start, stop, attempt + 1))
        else:
            self._fail_lost(start, stop, attempt, exc)

    def _fail_lost(self, start: int, stop: int, attempt: int, exc: BaseException | None) -> None:
        reason = exc if exc is not None else RuntimeError("the chunk was cancelled by the cluster")
        message = (
            f"this item's task failed {attempt + 1} times when run alone, as when it kills "
            f"its worker ({type(reason).__name__}: {reason})"
        )
        wrapped = RuntimeError(message)
        wrapped.__traceback__ = getattr(reason, "__traceback__", None)
        errors = [
            ItemError.from_exception(self.spec.indices[pos], pos, wrapped, "unknown")
            for pos in range(start, stop)
        ]
        self._complete(ChunkResult(start, [None] * (stop - start), errors, "unknown", 0.0))

    def _should_stop(self) -> bool:
        return self._cancel.is_set() or self._stop_reason is not None

    def _accept(self, chunk: ChunkResult, resumed: bool) -> int:
        """Fold a chunk into the result; return how many of its positions were new."""
        errors = {err.position: err for err in chunk.errors}
        new = 0
        with self._cond:
            for offset, record in enumerate(chunk.records):
                pos = chunk.start + offset
                if self._filled[pos]:
                    continue  # exactly once: a chunk that came back twice counts once
                self._filled[pos] = 1
                new += 1
                self._done += 1
                if pos in errors:
                    self._errors[pos] = errors[pos]
                    self._failed += 1
                else:
                    self._records[pos] = record
                    self._stream.append(pos)
            if resumed:
                self._resumed += new
            elif new:  # a copy that came back second is not counted again
                old = self._workers.get(chunk.worker, WorkerStats())
                self._workers[chunk.worker] = WorkerStats(
                    old.items + len(chunk.records),
                    old.busy_seconds + chunk.busy_seconds,
                    old.chunks + 1,
                )
                self._chunks += 1
            self._cond.notify_all()
        return new

    def _complete(self, chunk: ChunkResult) -> None:
        spec = self.spec
        if self._accept(chunk, resumed=False) == 0:
            return
        if spec.store is not None:
            spec.store.write_chunk(chunk)
            if chunk.errors:
                spec.store.append_errors(chunk.errors)
        progress = self.progress
        self.events.emit(
            ChunkFinished(
                self.run_id,
                chunk.start,
                len(chunk.records),
                len(chunk.errors),
                chunk.worker,
                chunk.busy_seconds,
                time.perf_counter() - self._started,
                progress.done,
                progress.failed,
                progress.total,
                tuple((e.index, f"{e.type}: {e.message}") for e in chunk.errors[:5]),
                chunk.metrics,
            )
        )
        if chunk.errors and spec.on_error == "raise":
            self._stop_error = chunk.errors[0]
            self._stop_reason = f"item {chunk.errors[0].index!r} failed (on_error='raise')"
        elif spec.max_failures is not None and progress.failed >= spec.max_failures:
            self._stop_error = chunk.errors[0] if chunk.errors else None
            self._stop_reason = f"{progress.failed} items failed (max_failures={spec.max_failures})"

    def _sorted_errors(self) -> list[ItemError]:
        with self._cond:
            return [self._errors[pos] for pos in sorted(self._errors)]

    def _conclude(self) -> None:
        spec = self.spec
        total = len(spec.indices)
        if self._stop_reason is not None:
            status = "stopped"
        elif self._done < total:
            status = "cancelled"
        else:
            status = "completed"
        workers = dict(sorted(self._workers.items()))
        stats = RunStats(
            items=total,
            ok=self._done - self._failed,
            failed=self._failed,
            not_run=total - self._done,
            resumed=self._resumed,
            wall_seconds=time.perf_counter() - self._started,
            setup_seconds=self._setup_seconds,
            chunks=self._chunks,
            workers=workers,
        )
        result = RunResult(
            indices=spec.indices,
            records=self._records,
            errors=self._sorted_errors(),
            stats=stats,
            status=status,
            output_dir=spec.store.path if spec.store is not None else None,
        )
        if status == "completed":
            result.summary = dict(spec.summarize(result.records))
        if spec.store is not None:
            spec.store.finish(result)
        self._result = result
        self.events.emit(
            RunFinished(
                self.run_id,
                status,
                self._done,
                self._failed,
                total,
                stats.wall_seconds,
                dict(result.summary),
            )
        )
        if spec.store is not None:
            _write_report(spec.store.path)
        if status == "stopped":
            error = self._stop_error
            detail = f"\n{error.traceback}" if error is not None else ""
            where = (
                f" Completed chunks are kept in {result.output_dir}." if result.output_dir else ""
            )
            self._exception = RunError(
                f"run {self.run_id} stopped: {self._stop_reason}.{where}{detail}", result, error
            )


def _call_quietly(callback: Callable[[RunHandle], None], handle: RunHandle) -> None:
    try:
        callback(handle)
    except Exception as exc:
        print(f"kit: done callback {callback!r} failed: {exc!r}", file=sys.stderr)


def _write_report(output_dir: Path) -> None:
    """Write report.html when bokeh is installed (it is an optional extra)."""
    try:
        from kit.dashboard import write_report

        write_report(output_dir)
    except ImportError:
        pass  # `kit report OUTPUT_DIR` says which extra to install


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _config_hash(config: DictConfig | None) -> str | None:
    if config is None:
        return None
    from kit.config import config_hash

    return config_hash(config)
