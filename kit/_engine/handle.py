"""RunHandle: a future for one run (progress, done, cancel, result, callbacks, iteration)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kit._engine.ledger import Ledger, StopPolicy
from kit._engine.run import Run
from kit._engine.spec import RunSpec
from kit.events import EventStream, RunFinished
from kit.result import Index, Progress, RunResult, RunStatus

if TYPE_CHECKING:
    from kit.session import Session

WAIT_STEP = 0.2  # seconds between checks while waiting


class RunHandle:
    """A run in progress: watch it, iterate over its records, wait, or cancel.

    Returned by :meth:`kit.Runner.submit` at once, before any cluster starts;
    :meth:`kit.Runner.run` waits on one. A run always ends in exactly one
    final :class:`kit.RunStatus`.

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
    >>> print(handle.progress)
    completed: 5/5 items
    >>> sorted(handle)
    [(0, 0), (1, 1), (2, 4), (3, 9), (4, 16)]
    """

    def __init__(self, spec: RunSpec, events: EventStream | None = None) -> None:
        self.spec = spec
        self.events = events or EventStream()
        self._ledger = Ledger(
            spec.job.indices, StopPolicy(spec.options.on_error, spec.options.max_failures)
        )
        #: The session the run uses, once it has one (None while it starts).
        self.session: Session | None = None
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._result: RunResult | None = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[RunHandle], None]] = []
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ public API
    @property
    def run_id(self) -> str:
        """Short id of this run (names its Dask tasks and events)."""
        return self.spec.run_id

    @property
    def status(self) -> RunStatus:
        """``starting`` (cluster, env), ``running``, then one final status."""
        return self._ledger.status

    @property
    def progress(self) -> Progress:
        """Items finished (ok or failed), failed, total and status, right now."""
        return self._ledger.progress()

    def done(self) -> bool:
        """Whether the run has ended and its result (or exception) is set."""
        return self._finished.is_set()

    def cancel(self) -> None:
        """Stop the run: pending chunks are cancelled, completed ones kept.

        ``result()`` then returns the partial result with status
        ``cancelled``; a later run into the same output_dir resumes.
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
        Exception
            Whatever ended the run in error, as raised: the provider's
            ``ConfigError``, a ``ProviderSetupError``, a ``StoreError``...
        """
        if not self.done() and threading.current_thread() is self._thread:
            raise RuntimeError(
                "result() was called on the run's own thread (from an event subscriber), "
                "where it would wait for itself; use add_done_callback instead"
            )
        if not self._finished.wait(timeout):
            raise TimeoutError(f"run {self.run_id} has not finished after {timeout} s")
        if self._exception is not None:
            raise self._exception
        assert self._result is not None  # set before _finished
        return self._result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """Wait for the run to end; return the exception it ended with, or None."""
        if not self._finished.wait(timeout):
            raise TimeoutError(f"run {self.run_id} has not finished after {timeout} s")
        return self._exception

    def add_done_callback(self, callback: Callable[[RunHandle], None]) -> None:
        """Call ``callback(handle)`` once the run has ended and its result is set.

        Added to a finished handle, it is called at once. It runs on the
        run's thread otherwise; an exception in it is printed, not raised.
        """
        with self._ledger.cond:
            if not self._finished.is_set():
                self._callbacks.append(callback)
                return
        _call_quietly(callback, self)

    def records_between(self, start: int, stop: int) -> list[Any]:
        """Return the records at positions ``start`` to ``stop`` as they stand now.

        None where an item failed or has not come back. For event
        subscribers: a ``ChunkFinished`` names its positions (``start``,
        ``items``), and is delivered once its records are in.
        """
        with self._ledger.cond:
            return list(self._ledger.records[start:stop])

    def __iter__(self) -> Iterator[tuple[Index, Any]]:
        """Yield ``(index, record)`` for every successful item, as items complete.

        When the run ends in error or is stopped, the loop raises that error
        after the last record, as :meth:`result` does.
        """
        indices, records = self.spec.job.indices, self._ledger.records
        for batch in self._ledger.completed(self._finished.is_set, WAIT_STEP):
            for pos in batch:
                yield indices[pos], records[pos]
        if self._exception is not None:
            raise self._exception

    def __repr__(self) -> str:
        return f"<RunHandle {self.run_id} {self.progress}>"

    # ------------------------------------------------------------ driving
    def start(self) -> RunHandle:
        """Drive the run on a background thread (it starts the session there)."""
        self._thread = threading.Thread(
            target=self.drive, name=f"kit-run-{self.run_id}", daemon=True
        )
        self._thread.start()
        return self

    @property
    def background(self) -> bool:
        """Whether the run is driven on a thread of its own (:meth:`start`)."""
        return self._thread is not None

    def join(self, timeout: float | None = None) -> None:
        """Wait for the driving thread to end."""
        if self._thread is not None:
            self._thread.join(timeout)

    def drive(self) -> None:
        """Run to the end on the calling thread, then publish the result or exception."""
        run = Run(
            self.spec,
            self._ledger,
            self.events,
            self._should_stop,
            background=self.background,
            on_session=self._use_session,
        )
        result: RunResult | None = None
        try:
            result, exc = run.drive()
        except BaseException as failure:  # concluding itself failed (e.g. a full disk)
            exc = failure
            if not run.finished_emitted:
                self._ledger.set_status(RunStatus.ERROR)
                p = self._ledger.progress()
                self.events.emit(
                    RunFinished(
                        self.run_id,
                        RunStatus.ERROR,
                        p.done,
                        p.failed,
                        p.total,
                        time.perf_counter() - run.started,
                        error=f"{type(exc).__name__}: {exc}",
                    )
                )
        with self._ledger.cond:
            self._result, self._exception = result, exc
            self._finished.set()
            self._ledger.cond.notify_all()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _call_quietly(callback, self)

    def _use_session(self, session: Session) -> None:
        self.session = session

    def _should_stop(self) -> bool:
        return self._cancel.is_set() or self._ledger.stopping


def _call_quietly(callback: Callable[[RunHandle], None], handle: RunHandle) -> None:
    try:
        callback(handle)
    except Exception as exc:
        print(f"kit: done callback {callback!r} failed: {exc!r}", file=sys.stderr)
