"""One run: the handle users hold, and the driver that runs it on the run's thread.

:class:`RunHandle` is the future (status, progress, cancel, result,
callbacks, iteration); it builds a :class:`Run`, which is given everything
it needs and reaches into nothing of the handle's. Every path out of
:meth:`Run.drive`, a clean end or any exception, ends in one final
:class:`~kit.result.RunStatus`, one ``RunFinished`` event and, when the
run stored anything, ``result.json``; the run then gives the handle the
result or the exception to publish.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from omegaconf import DictConfig

from kit._base.errors import SchedulerLostError
from kit._base.waiting import WAIT_STEP
from kit._engine.dask import DaskDispatcher
from kit._engine.inline import InlineDispatcher
from kit._engine.intake import ChunkIntake
from kit._engine.ledger import Ledger, StopPolicy
from kit._engine.plan import ChunkPlanner
from kit._engine.spec import ChunkJob, RunSpec
from kit.cluster._bounded import SetupCancelled
from kit.cluster._run_book import ERROR_CHARS
from kit.cluster._seats import ClusterSeat
from kit.cluster._session import Session, get_session, session_for_client
from kit.events import EventStream, RunFinished, RunStarted
from kit.result import Index, Progress, RunError, RunResult, RunStatus


class RunHandle:
    """A run in progress: watch it, iterate over its records, wait, or cancel.

    Returned by :meth:`kit.Runner.submit` at once, before any cluster starts;
    :meth:`kit.Runner.run` waits on one. A run always ends in exactly one
    final :class:`kit.RunStatus`.

    Examples
    --------
    >>> from kit.examples.toy import Env, Square
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

    def cancel(self, timeout: float = 0.0) -> None:
        """Stop the run: pending chunks are cancelled, completed ones kept.

        ``result()`` then returns the partial result with status
        ``cancelled``; a later run into the same output_dir resumes. With a
        ``timeout``, wait up to that many seconds for the run to end (as
        :meth:`kit.detached.DetachedRun.cancel` does); by default return at once.
        """
        self._cancel.set()
        if timeout > 0 and threading.current_thread() is not self._thread:
            self._finished.wait(timeout)

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
            target=self._run(background=True).drive, name=f"kit-run-{self.run_id}", daemon=True
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
        self._run(background=False).drive()

    def _run(self, background: bool) -> Run:
        """Return the run's driver: given what it needs, it publishes through ``_publish``."""
        return Run(
            self.spec,
            self._ledger,
            self.events,
            self._should_stop,
            background=background,
            on_session=self._use_session,
            on_end=self._publish,
        )

    def _publish(self, result: RunResult | None, exc: BaseException | None) -> None:
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


def with_config(job: ChunkJob, env_keys: Sequence[str], config: DictConfig | None) -> ChunkJob:
    """Give ``forward`` the run's config when it has a ``config`` parameter the env does not fill.

    So ``forward`` reads what varies between runs sharing one env (a sweep's
    beam size) from the run's own config. Not in the manifest's keywords: the
    config is recorded there already.
    """
    spec = job.forward_spec
    wants = "config" in spec.required or "config" in spec.optional
    if not wants or config is None or "config" in env_keys or "config" in job.explicit:
        return job
    return replace(job, explicit={**job.explicit, "config": config})


class Run:
    """The driving side of one run, on the run's thread: all it needs is given to it.

    Parameters
    ----------
    spec, ledger, events
        What to run, where its items' outcomes are kept, where it tells the views.
    should_stop
        Whether to stop now (a cancel, or the stop policy).
    background
        Whether the run has a thread of its own: a run on the caller's thread
        is stopped by Ctrl-C there, so its setup need not watch ``should_stop``.
    on_session
        Told the session the run uses, once it has one.
    on_end
        Given the result (None if even concluding failed) and the exception
        the run ended with, once, at its end.
    """

    def __init__(
        self,
        spec: RunSpec,
        ledger: Ledger,
        events: EventStream,
        should_stop: Callable[[], bool],
        *,
        background: bool,
        on_session: Callable[[Session], None] = lambda _: None,
        on_end: Callable[[RunResult | None, BaseException | None], None] = lambda *_: None,
    ) -> None:
        self.spec = spec
        self.ledger = ledger
        self.events = events
        self.should_stop = should_stop
        self.background = background
        self.on_session = on_session
        self.on_end = on_end
        self.started = time.perf_counter()
        self.setup_seconds = 0.0
        self.began = False  # the store was opened by this run
        self.finished_emitted = False
        #: Where the chunks that come back go: the store, the ledger, the views.
        self.intake = ChunkIntake(spec, ledger, events, self.started)
        self.session: Session | None = None
        self.env_name: str | None = None
        self.seat: ClusterSeat | None = None

    def drive(self) -> None:
        """Run to the end; give ``on_end`` the result and the exception the run ended with.

        Every way out, a clean end or any exception, ends in one final
        status and one ``RunFinished``; ``on_end`` is called once, always.
        """
        result: RunResult | None = None
        exc: BaseException | None = None
        try:
            dispatcher = self._set_up()
            if dispatcher is None:  # the setup was cancelled
                result = self._conclude(RunStatus.CANCELLED)
            else:
                try:
                    dispatcher.run()
                except SchedulerLostError:
                    if self.session is not None and not self.session.borrowed:
                        # Else its client keeps trying to reconnect, and logging it, for 30 s.
                        self.session.close()
                    raise
                if self.spec.store is not None:
                    self.spec.store.check_still_there()  # not done if its chunks went away
                result = self._conclude(self.ledger.final_status())
                exc = self._stop_error(result)
        except KeyboardInterrupt as interrupt:
            result, exc = self._end(RunStatus.CANCELLED, interrupt)
        except BaseException as failure:
            result, exc = self._end(RunStatus.ERROR, failure, failure)
        try:
            self._release()
        except BaseException as failure:
            result, exc = None, failure
        self.on_end(result, exc)

    def _set_up(self) -> InlineDispatcher | DaskDispatcher | None:
        """Take the session, the env and the store; return the dispatcher (None: cancelled)."""
        spec = self.spec
        spec.provider.check_config()
        session = self.session = self._session()
        try:
            self.env_name, env_keys = session.attach(
                spec.provider,
                # A run driven on the caller's thread is stopped by Ctrl-C there.
                should_stop=self.should_stop if self.background else None,
                timeout=spec.options.setup_timeout,
            )
        except SetupCancelled:
            return None
        job = with_config(spec.job, env_keys, spec.config)
        job.forward_spec.check(env_keys, job.explicit)
        if job.batch_by is not None:
            job.batch_by.spec.check(env_keys, {})
        pending = self._open_store()
        if spec.reuse is not None and spec.store is not None:
            job = spec.reuse.wrap(job, spec.store.path, pending)
        self.setup_seconds = time.perf_counter() - self.started
        self.ledger.set_status(RunStatus.RUNNING)
        self.events.emit(
            RunStarted(
                spec.run_id,
                self.ledger.total,
                self.ledger.resumed,
                session.threads_at_attach,
                session.dashboard_link,
                time.time(),
            )
        )
        if session.client is None:
            planner = ChunkPlanner(
                pending, session.threads_at_attach, spec.options.chunk_size, job.batch_size
            )
            env = session.envs.local(self.env_name)
            return InlineDispatcher(job, env, planner, self.intake.complete, self.should_stop)
        seat = self.seat = take_seat(session, spec, self.ledger, self.env_name)
        planner = ChunkPlanner(pending, seat.last.share, spec.options.chunk_size, job.batch_size)
        return DaskDispatcher(
            session.client,
            self.env_name,
            job,
            planner,
            self.intake.complete,
            self.should_stop,
            spec.options.retries,
            spec.options.backups,
            session.parallel.startup_timeout,
            seat,
        )

    def _release(self) -> None:
        """Leave the cluster's seat, unlock the store, let go of the env."""
        if self.seat is not None:
            self.seat.leave()
        if self.spec.store is not None:
            self.spec.store.unlock()
        if self.session is not None and self.env_name is not None:
            self.session.release(self.env_name)

    def _session(self) -> Session:
        spec = self.spec
        if spec.client is not None:
            session = session_for_client(spec.client)
        else:
            # A job queue the run starts writes its jobs' output files beside the results.
            logs = None if spec.store is None else spec.store.files.job_logs
            session = get_session(spec.parallel, job_logs=logs)
        self.on_session(session)
        return session

    def _open_store(self) -> list[tuple[int, int]]:
        spec, ledger = self.spec, self.ledger
        if spec.store is None:
            return [(0, ledger.total)]
        stored = spec.store.open_run(spec.manifest_request(), spec.options.resume)
        self.began = True
        for chunk in stored:
            ledger.accept(chunk, resumed=True)
        # Start errors.jsonl from what is stored; this run's chunks append to it.
        spec.store.write_errors(ledger.errors())
        return ledger.missing()

    def _conclude(self, status: RunStatus, exc: BaseException | None = None) -> RunResult:
        """Build the result, store it and emit ``RunFinished``, whatever ended the run."""
        spec = self.spec
        result = self.ledger.result(
            status,
            time.perf_counter() - self.started,
            self.setup_seconds,
            spec.store.path if spec.store is not None and self.began else None,
        )
        if spec.reuse is not None:
            spec.reuse.count(result)
        if status is RunStatus.COMPLETED:
            result.summary = dict(spec.summarize(result.records))
        # What ended a run that did not complete, in one line, for the store and the views.
        reason = None if exc is None else f"{type(exc).__name__}: {exc}"
        if status is RunStatus.STOPPED and self.ledger.stop_reason:
            reason = f"stopped: {self.ledger.stop_reason}"
        if status is RunStatus.CANCELLED and self.seat is not None and self.seat.cancel_by:
            # Who, as the scheduler told it from the key used: the run's own, or the teacher's.
            reason = f"cancelled on the cluster by {self.seat.cancel_by}"
        if self.began and spec.store is not None:
            try:
                spec.store.finish(result, reason)
            except OSError as err:  # a full disk: the chunks are stored, result.json is not
                warnings.warn(
                    f"kit: result.json could not be written in {spec.store.path}: "
                    f"{err.strerror or err}; the stored chunks are kept and a later run "
                    "resumes from them",
                    RuntimeWarning,
                    stacklevel=2,
                )
        self.ledger.set_status(status)
        self.events.emit(
            RunFinished(
                spec.run_id,
                status,
                self.ledger.done,
                self.ledger.failed,
                self.ledger.total,
                result.stats.wall_seconds,
                dict(result.summary),
                reason,
            )
        )
        self.finished_emitted = True
        return result

    def _end(
        self, status: RunStatus, exc: BaseException, reason: BaseException | None = None
    ) -> tuple[RunResult | None, BaseException]:
        """Conclude as ``status`` after ``exc``; if concluding fails too, say so to the views."""
        try:
            return self._conclude(status, reason), exc
        except BaseException as failure:  # concluding itself failed (e.g. a full disk)
            if not self.finished_emitted:
                self.ledger.set_status(RunStatus.ERROR)
                p = self.ledger.progress()
                self.events.emit(
                    RunFinished(
                        self.spec.run_id,
                        RunStatus.ERROR,
                        p.done,
                        p.failed,
                        p.total,
                        time.perf_counter() - self.started,
                        error=f"{type(failure).__name__}: {failure}",
                    )
                )
            return None, failure

    def _stop_error(self, result: RunResult) -> RunError | None:
        if result.status is not RunStatus.STOPPED:
            return None
        error = self.ledger.stop_error
        detail = f"\n{error.traceback}" if error is not None else ""
        where = f" Completed chunks are kept in {result.output_dir}." if result.output_dir else ""
        return RunError(
            f"run {self.spec.run_id} stopped: {self.ledger.stop_reason}.{where}{detail}",
            result,
            error,
        )


def take_seat(session: Session, spec: RunSpec, ledger: Ledger, env_name: str) -> ClusterSeat:
    """Seat a run on its cluster: its fair share, the teacher's list, a cancel request."""
    return ClusterSeat(
        session.client,
        spec.run_id,
        runner=spec.runner_name,
        env=env_name,
        total=ledger.total,
        max_slots=spec.options.max_slots,
        progress=functools.partial(_progress_said, ledger),
        keys=session.run_keys,
    )


def _progress_said(ledger: Ledger) -> tuple[int, int, str]:
    """Items finished and failed, and the first item error in a line (the class board's)."""
    progress = ledger.progress()
    first = ledger.first_error
    said = ""
    if first is not None:
        message = (first.message.strip().splitlines() or [""])[0]
        said = f"item {first.index!r}: {first.type.rsplit('.', 1)[-1]}: {message}"
    return progress.done, progress.failed, said[:ERROR_CHARS]
