"""Run chunks as Dask tasks: elastic capacity, recovery of lost chunks, backup copies.

The dispatcher keeps about two chunks in flight per worker thread the
cluster has *now* (re-read from the scheduler while there is work to hand
out), so workers that join mid-run get work at the next arrival and
workers that leave take nothing with them: their chunks come back as
lost and run again. A chunk in which one item runs well past the whole
chunk's expected time stops after that item and hands back the ones it
has not started, which are planned again as soon as the item passes that
time (the worker says so while it still runs): an item many times slower
than the rest (a long utterance, a heavy-tailed duration) then delays only
itself, not the items queued behind it in its chunk.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit._engine.plan import ChunkPlanner
from kit._engine.spec import ChunkJob
from kit._errors import NoWorkersError, SchedulerLostError
from kit._waiting import WAIT_STEP
from kit.result import ItemError
from kit.store._chunk_result import ChunkResult

CAPACITY_CHECK = 0.2  # at most this often, ask the scheduler how many threads it has
#: A backup copy gains at most the queued chunk's own time; below this it is not worth one.
BACKUP_MIN_SECONDS = 0.02
#: ...and that time must be this many round trips, the price of sending a copy.
BACKUP_ROUND_TRIPS = 4
#: Chunks sent in one graph update. The scheduler starts none of an update's tasks
#: before it has taken them all in: on 256 slots the first of 512 one-item tasks
#: sent at once started after 60-150 ms, of 64 after 25-50 ms; a run's first
#: 0.6 s left 49 slot-seconds idle sent in one map, 38 sent 64 at a time (medians
#: of 4 runs of benchmarks/bench_scale.py's items).
MAP_CHUNKS = 64


class BusyClock:
    """Time the driver's thread works, less the time it waits, per chunk taken back.

    Waiting for arrivals, and for the scheduler's answers (a gather, a
    count of threads), is not work: meanwhile other chunks arrive and are
    taken back together next. Counting those waits would make the measured
    cost per chunk the time between arrivals, however little the thread
    does, and chunks the planner sizes from it would stop shrinking.

    Examples
    --------
    >>> ticks = iter([0.0, 1.0, 4.0, 5.0])  # a clock read at each step
    >>> clock = BusyClock(now=lambda: next(ticks))
    >>> with clock.waiting():  # from 1.0 to 4.0
    ...     pass
    >>> clock.per_chunk(2)  # 5 s, less 3 s waited, over 2 chunks
    1.0
    """

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        # Start of the stretch of busy time not yet charged to chunks (moved
        # forward by each wait).
        self._mark = now()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Leave the time spent in the block out of the busy time."""
        began = self._now()
        try:
            yield
        finally:
            self._mark += self._now() - began

    def per_chunk(self, arrivals: int) -> float:
        """Busy seconds since the last call, per chunk of the ``arrivals`` taken back."""
        now = self._now()
        busy = max(0.0, now - self._mark)
        self._mark = now
        return busy / max(1, arrivals)


@dataclass(frozen=True)
class Overdue:
    """A worker's word that chunk task ``key`` will end at position ``end``, not later."""

    key: str
    end: int


@dataclass
class Flight:
    """One chunk task sent to the cluster."""

    start: int
    stop: int
    attempt: int
    alone: bool
    future: Any
    sent: float = field(default_factory=time.perf_counter)
    #: The worker an item run alone was sent to (None: the scheduler chose).
    worker: str | None = None
    #: Worker deaths these positions went through before this task.
    deaths: int = 0


class DaskDispatcher:
    """Send a run's chunks to a Dask cluster and hand back what completes.

    Parameters
    ----------
    client
        The Dask client.
    env_name
        Name of the provider's env on the workers.
    job
        What every chunk shares.
    planner
        Cuts the pending positions into chunks.
    complete
        Called with the chunks that came back together (the run stores them in
        one commit and folds them in).
    should_stop
        True once the run is cancelled or stopped.
    retries
        Attempts, alone, for an item whose chunk keeps failing.
    backups
        ``"auto"``: send one copy of a chunk queued behind another while a
        worker idles at the end of a run, when the chunk's expected time is
        well above a round trip; ``"off"``: never.
    """

    def __init__(
        self,
        client: Any,
        env_name: str,
        job: ChunkJob,
        planner: ChunkPlanner,
        complete: Callable[[Sequence[ChunkResult]], None],
        should_stop: Callable[[], bool],
        retries: int,
        backups: str = "auto",
        no_worker_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.no_worker_timeout = no_worker_timeout
        # When the cluster was last seen without a single worker (None: it has some).
        self._empty_since: float | None = None
        # When the client lost its scheduler (None: connected), and the chunks the
        # loss cancelled, sent again as they were once it is back.
        self._lost_since: float | None = None
        self.requeued: deque[Flight] = deque()
        self.env_name = env_name
        self.job = job
        self.planner = planner
        #: The event topic on which workers say a chunk will end early (see Overdue).
        self.overdue_topic = f"kit-overdue-{job.run_id}"
        # Here, not at the top: importing distributed would make `import kit` slow.
        from kit._engine.task import run_chunk

        self._task = run_chunk
        # What every chunk task shares, as run_chunk's keywords.
        self._shared = {
            "forward": job.forward,
            "env_name": env_name,
            "forward_spec": job.forward_spec,
            "explicit": job.explicit,
            "batch": job.batch_size,
            "batch_by": job.batch_by,
            "overdue_topic": self.overdue_topic,
        }
        self.complete = complete
        self.should_stop = should_stop
        self.retries = retries
        self.backups = backups
        self.arrived: queue.Queue[Any] = queue.Queue()
        self.in_flight: dict[str, Flight] = {}
        # Keys of the copies of each (start, stop) out at once (a chunk and its backup).
        self.twins: dict[tuple[int, int], list[str]] = {}
        # Pieces of chunks lost once with a worker, sent again spread over the
        # workers as (start, stop); lost again, their items go alone (see lost()).
        self.spread: deque[tuple[int, int]] = deque()
        # Items run again one by one, alone, so an item that kills its worker is
        # named by its next death: (start, stop, attempt alone, deaths before).
        self.isolated: deque[tuple[int, int, int, int]] = deque()
        self.threads = planner.n_workers
        # The most worker threads seen in this run: a lost chunk is cut for them, as a
        # killed worker's nanny starts it again in a moment.
        self.most_threads = self.threads
        self._capacity_checked = time.perf_counter()
        self.planned_all = False
        # Least overhead seen between sending a chunk and having it back, beyond its
        # compute time: the price of a backup copy.
        self.round_trip = 0.01
        self.clock = BusyClock()

    # ---------------------------------------------------------------- loop
    def run(self) -> None:
        """Run until every chunk is done or the run must stop; cancel what is left.

        Each turn sends chunks until about two per worker thread are out, then
        takes back every chunk that came back in one gather and hands the
        completed ones to ``complete``.
        """
        with contextlib.suppress(Exception):  # without it, chunks say so when they return
            self.client.subscribe_topic(self.overdue_topic, self._overdue_event)
        try:
            arrival = False
            while True:
                if self.client.status != "running":
                    if self.should_stop():
                        return
                    self._wait_for_scheduler()
                    continue
                while self.requeued:
                    self.relaunch(self.requeued.popleft())
                if self.isolated or any(f.alone for f in self.in_flight.values()):
                    # Until every lost item is back, nothing else goes out.
                    if self.isolated and not self.should_stop():
                        self._launch_isolated()
                else:
                    self._fill()
                    if arrival and self.planned_all and self.backups == "auto":
                        self.back_up()
                arrival = False
                self._lost_since = None
                if not self.in_flight or self.should_stop():
                    return
                try:
                    with self.clock.waiting():
                        first = self.arrived.get(timeout=WAIT_STEP)
                except queue.Empty:
                    self._check_workers_left()
                    continue
                # Every chunk back that is in: one gather.
                futures = self._take_arrivals(first)
                flights = [self.in_flight[f.key] for f in futures if f.key in self.in_flight]
                if not flights:
                    continue  # cancelled twins
                arrival = True
                done = []
                for flight, outcome in zip(flights, self._gather(flights), strict=True):
                    chunk = self._arrive(flight, outcome)
                    if chunk is not None:
                        done.append(chunk)
                if done:
                    self.complete(done)
                self._time_arrivals(len(flights))
        finally:
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(self.overdue_topic)
            if self.in_flight:
                # A client whose scheduler is gone refuses; its futures are void anyway.
                with contextlib.suppress(Exception):
                    self.client.cancel([f.future for f in self.in_flight.values()])

    def _launch_isolated(self) -> None:
        """Send items of lost chunks, each alone on a worker of its own, on every free worker.

        A worker is free when none of this run's tasks is on it: chunks sent
        before drain first, wherever they are. Alone on its worker, an item
        is named by that worker's death; on every worker at once, a lost
        chunk runs again in about its own time over the number of workers.
        """
        if any(f.alone and f.worker is None for f in self.in_flight.values()):
            return  # an item the scheduler places itself: wait for it
        try:
            known = self.client.scheduler_info()["workers"]
            processing = self.client.processing() if self.in_flight else {}
        except Exception:  # the scheduler is busy or gone: try at the next step
            return
        occupied = {f.worker for f in self.in_flight.values() if f.alone}
        assigned: set[str] = set()
        for worker, keys in processing.items():
            ours = [str(k) for k in keys if str(k) in self.in_flight]
            assigned.update(ours)
            if ours:
                occupied.add(worker)
        if any(key not in assigned for key, f in self.in_flight.items() if not f.alone):
            return  # a chunk not on a worker yet could land beside an item: wait
        workers: list[str | None] = [
            address
            for address, info in known.items()
            if address not in occupied and info.get("status", "running") == "running"
        ]
        if not workers and not self.in_flight:
            workers = [None]  # none known now: one item, placed when a worker joins
        for worker in workers:
            if not self.isolated:
                return
            start, stop, attempt, deaths = self.isolated.popleft()
            self.launch(start, stop, attempt, alone=True, worker=worker, deaths=deaths)

    def _wait_for_scheduler(self) -> None:
        """Wait one step for a lost scheduler to come back; raise once it will not.

        Distributed cancels every future when its client loses the scheduler,
        and tries to reconnect for its connect timeout before closing. The
        chunks it cancelled are sent again once it is back; until then nothing
        is sent. A closed client, or ``no_worker_timeout`` seconds without a
        scheduler, ends the run: completed chunks are stored already.
        """
        now = time.perf_counter()
        if self._lost_since is None:
            self._lost_since = now
        gone = now - self._lost_since
        limit = self.no_worker_timeout
        if self.client.status in ("closing", "closed") or (limit is not None and gone >= limit):
            address = getattr(self.client.scheduler, "address", None) or "its address"
            raise SchedulerLostError(
                f"the scheduler at {address} went away during the run (no connection for "
                f"{gone:.0f} s); the chunks completed before are kept: start the scheduler "
                "again (or check its machine and network), then run again to resume"
            )
        try:
            first = self.arrived.get(timeout=WAIT_STEP)
        except queue.Empty:
            return
        for future in self._take_arrivals(first):
            flight = self.in_flight.get(future.key)
            if flight is not None:
                self._settle(future.key)
                self.requeued.append(flight)

    def _fill(self) -> None:
        """Send chunks until about two per worker thread are out, pieces of lost ones first.

        They go in ``client.map`` calls of ``MAP_CHUNKS``: the scheduler takes
        one graph update for each, where a ``submit`` each costs one (512
        one-item tasks ran in 0.34 s sent by one map, 1.2 s sent one by one, on
        256 slots), and starts none of an update's tasks before it has taken
        all of them in (see ``MAP_CHUNKS``).
        """
        room = 2 * self.capacity() - len(self.in_flight)
        spans: list[tuple[int, int, int]] = []  # start, stop, worker deaths before
        while self.spread and len(spans) < room and not self.should_stop():
            start, stop = self.spread.popleft()
            spans.append((start, stop, 1))
        while not self.planned_all and len(spans) < room and not self.should_stop():
            span = self.planner.next()
            if span is None:
                self.planned_all = True
                break
            spans.append((*span, 0))
        self.launch_many(spans)

    def capacity(self) -> int:
        """Worker threads the cluster has now (asked at most every CAPACITY_CHECK s)."""
        now = time.perf_counter()
        if now - self._capacity_checked >= CAPACITY_CHECK:
            self._capacity_checked = now
            try:
                with self.clock.waiting():
                    threads: dict[str, int] = self.client.nthreads()
            except Exception:  # the scheduler is busy or gone: keep the last count
                return self.threads
            # No worker at all (all left): keep one chunk out, it waits on the scheduler.
            total = sum(threads.values())
            if total:
                self._empty_since = None
            elif self._empty_since is None:
                self._empty_since = now
            self.threads = max(1, total)
            self.most_threads = max(self.most_threads, self.threads)
            self.planner.n_workers = self.threads
        return self.threads

    def _check_workers_left(self) -> None:
        """End the run once the cluster has had no worker for ``no_worker_timeout`` seconds.

        Workers that keep dying (an item that kills each one, a job queue that
        stopped the jobs) would otherwise leave the run waiting for ever.
        """
        self.capacity()
        if self.no_worker_timeout is None or self._empty_since is None:
            return
        if time.perf_counter() - self._empty_since >= self.no_worker_timeout:
            raise NoWorkersError(
                f"the cluster has had no worker for {self.no_worker_timeout:g} s "
                f"(parallel.startup_timeout) with {len(self.in_flight)} chunk(s) waiting; "
                "completed chunks are kept: check the workers' logs (an item that kills "
                "every worker, jobs the queue ended), then run again to resume"
            )

    def launch(
        self,
        start: int,
        stop: int,
        attempt: int,
        alone: bool,
        backup: bool = False,
        worker: str | None = None,
        deaths: int = 0,
    ) -> None:
        """Send positions ``start:stop`` as one task (to ``worker``, if it is still there)."""
        future = self.client.submit(
            self._task,
            # A range stays a range: a few bytes to ship whatever the chunk's size.
            self.job.indices[start:stop],
            start,
            None if alone else self.planner.budget(stop - start),
            key=self._key(start, stop, deaths, attempt, alone, backup),
            pure=False,
            # Loose: if that worker is gone, another runs it rather than none ever.
            workers=None if worker is None else [worker],
            allow_other_workers=worker is not None,
            **self._shared,
        )
        self._sent(Flight(start, stop, attempt, alone, future, worker=worker, deaths=deaths))

    def launch_many(self, spans: Sequence[tuple[int, int, int]]) -> None:
        """Send each ``(start, stop, deaths)`` as a first attempt, ``MAP_CHUNKS`` per map."""
        for first in range(0, len(spans), MAP_CHUNKS):
            part = spans[first : first + MAP_CHUNKS]
            futures = self.client.map(
                self._task,
                [self.job.indices[start:stop] for start, stop, _ in part],
                [start for start, _, _ in part],
                [self.planner.budget(stop - start) for start, stop, _ in part],
                key=[
                    self._key(start, stop, deaths, 0, False, False) for start, stop, deaths in part
                ],
                pure=False,
                **self._shared,
            )
            for (start, stop, deaths), future in zip(part, futures, strict=True):
                self._sent(Flight(start, stop, 0, False, future, deaths=deaths))

    def _key(
        self, start: int, stop: int, deaths: int, attempt: int, alone: bool, backup: bool
    ) -> str:
        return f"kit-{self.job.run_id}-{start}-{stop}-{deaths}-{attempt}-{int(alone)}" + (
            "-b" if backup else ""
        )

    def _sent(self, flight: Flight) -> None:
        self.in_flight[flight.future.key] = flight
        self.twins.setdefault((flight.start, flight.stop), []).append(flight.future.key)
        flight.future.add_done_callback(self.arrived.put)

    def relaunch(self, flight: Flight) -> None:
        """Send a chunk the cluster cancelled (no worker died) again, as it was."""
        self.launch(
            flight.start,
            flight.stop,
            flight.attempt,
            flight.alone,
            worker=flight.worker,
            deaths=flight.deaths,
        )

    def _gather(self, flights: list[Flight]) -> list[ChunkResult | BaseException | None]:
        """Fetch the results of chunks that came back: one call for all that finished."""
        finished = [f for f in flights if f.future.status == "finished"]
        got: dict[str, ChunkResult | BaseException] = {}
        try:
            with self.clock.waiting():
                results = self.client.gather([f.future for f in finished]) if finished else []
            got = {f.future.key: r for f, r in zip(finished, results, strict=True)}
        except Exception:
            for flight in finished:  # one was lost between finishing and gathering
                try:
                    got[flight.future.key] = flight.future.result()
                except Exception as exc:
                    got[flight.future.key] = exc
        out: list[ChunkResult | BaseException | None] = []
        for flight in flights:
            if flight.future.key in got:
                out.append(got[flight.future.key])
            elif flight.future.status == "error":
                out.append(flight.future.exception())
            else:
                out.append(None)  # cancelled by the cluster
        return out

    def _arrive(
        self, flight: Flight, outcome: ChunkResult | BaseException | None
    ) -> ChunkResult | None:
        """Settle a task that came back; return its chunk if it completed, to be folded in."""
        if flight.future.key not in self.in_flight:
            return None  # its twin of this same batch was folded in and cancelled it
        twin_out = self._settle(flight.future.key)
        if isinstance(outcome, ChunkResult):
            overhead = time.perf_counter() - flight.sent - outcome.busy_seconds
            self.round_trip = max(1e-3, min(self.round_trip, overhead))
            self._drop_twins(flight.start, flight.stop)
            self.planner.observe(len(outcome.records), outcome.busy_seconds)
            if outcome.stop < flight.stop:  # cut at its budget: the rest goes again
                if flight.deaths:
                    self.spread.appendleft((outcome.stop, flight.stop))
                else:
                    self.planner.put_back(outcome.stop, flight.stop)
                    self.planned_all = False
            return outcome
        if not twin_out:
            if outcome is None and self.client.status != "running":
                # Cancelled by the client losing its scheduler: no worker died.
                self.requeued.append(flight)
            else:
                self.lost(flight, outcome)
        return None

    def _take_arrivals(self, first: Any) -> list[Any]:
        """``first`` and every other arrival queued: the futures; Overdue words act here."""
        got = [first]
        while not self.arrived.empty():
            got.append(self.arrived.get_nowait())
        futures = []
        for item in got:
            if isinstance(item, Overdue):
                self._overdue(item)
            else:
                futures.append(item)
        return futures

    def _overdue_event(self, event: tuple[float, Any]) -> None:
        """On the client's loop: pass a worker's Overdue word to the run's thread."""
        msg = event[1]
        self.arrived.put(Overdue(str(msg["key"]), int(msg["end"])))

    def _overdue(self, notice: Overdue) -> None:
        """Plan the positions after ``notice.end`` again now: their chunk ends there.

        The chunk's own result would say the same once its slow item is done;
        meanwhile the items behind it run elsewhere. A chunk with a copy out
        (a backup, which runs them all) waits for its result, as before.
        """
        flight = self.in_flight.get(notice.key)
        if flight is None or flight.alone or not flight.start < notice.end < flight.stop:
            return  # back already, or nothing behind the slow item
        span = (flight.start, flight.stop)
        if len(self.twins[span]) > 1:
            return
        self.twins[(flight.start, notice.end)] = self.twins.pop(span)
        rest = (notice.end, flight.stop)
        flight.stop = notice.end
        if flight.deaths:
            self.spread.appendleft(rest)
        else:
            self.planner.put_back(*rest)
            self.planned_all = False

    def _time_arrivals(self, arrivals: int) -> None:
        """Keep the planner told how long this thread is busy per chunk (send, take back)."""
        sample = self.clock.per_chunk(arrivals)
        old = self.planner.driver_seconds
        self.planner.driver_seconds = sample if old == 0.0 else 0.8 * old + 0.2 * sample

    def _settle(self, key: str) -> bool:
        """Forget ``key`` (it came back); return True if its twin is still out."""
        flight = self.in_flight.pop(key)
        keys = self.twins[(flight.start, flight.stop)]
        keys.remove(key)
        if not keys:
            del self.twins[(flight.start, flight.stop)]
        return bool(keys)

    def _drop_twins(self, start: int, stop: int) -> None:
        for key in self.twins.pop((start, stop), []):
            self.client.cancel([self.in_flight.pop(key).future])

    # ------------------------------------------------------------- backups
    def back_up(self) -> None:
        """Copy chunks queued behind another one while a worker idles, when it pays.

        A copy gains at most the queued chunk's own time (the run otherwise ends
        that much after the chunk ahead of it), and costs a round trip and maybe
        the same work twice: so only chunks expected to take well over a round
        trip are copied, never chunks already running, and each at most once.
        The first copy back wins; the other is cancelled.
        """
        per_item = self.planner.seconds_per_item
        if per_item is None:
            return
        worth = max(BACKUP_MIN_SECONDS, BACKUP_ROUND_TRIPS * self.round_trip)
        try:
            with self.clock.waiting():
                processing: dict[str, list[str]] = self.client.processing()
        except Exception:
            return
        idle = sum(1 for keys in processing.values() if not keys)
        if not idle:
            return
        order = {key: i for i, key in enumerate(self.in_flight)}
        queued: list[str] = []
        for keys in processing.values():
            ours = sorted((str(k) for k in keys if str(k) in order), key=order.__getitem__)
            queued.extend(ours[1:])  # a worker runs its chunks in the order sent
        for key in sorted(queued, key=order.__getitem__):
            if not idle:
                return
            flight = self.in_flight[key]
            expected = (flight.stop - flight.start) * per_item
            if flight.alone or len(self.twins[(flight.start, flight.stop)]) > 1:
                continue
            if expected >= worth:
                self.launch(
                    flight.start,
                    flight.stop,
                    flight.attempt,
                    False,
                    backup=True,
                    deaths=flight.deaths,
                )
                idle -= 1

    # --------------------------------------------------------- lost chunks
    def lost(self, flight: Flight, exc: BaseException | None) -> None:
        """Decide what to do with a chunk whose task failed (its worker died, say).

        A chunk lost for the first time is cut into one piece per worker
        thread, sent again like any chunk: the loss costs about the chunk's
        own time over the number of workers, and the run goes on meanwhile.
        A piece (or a one-item chunk) lost again may hold an item that kills
        its worker: each of its items runs again alone on its worker, all
        workers at once with nothing else in flight, so the next death names
        the item. That item gets ``retries`` more attempts, then is recorded
        as failed; every other item runs. With the scheduler failing a task
        at its first worker death (as on the clusters Kit starts), a killing
        item costs at most ``retries + 3`` worker deaths (``retries + 2`` in
        chunks of one item).
        """
        start, stop, attempt = flight.start, flight.stop, flight.attempt
        died_on = getattr(getattr(exc, "last_worker", None), "address", None)
        if flight.alone and flight.worker is not None and died_on not in (None, flight.worker):
            # Its worker was gone and another ran it, maybe beside an item that kills:
            # no proof against this one, so it goes again, uncharged.
            self.isolated.appendleft((start, stop, attempt, flight.deaths))
            return
        deaths = flight.deaths + 1
        if not flight.alone and flight.deaths == 0 and stop - start > 1:
            self.spread.extend(pieces(start, stop, self.most_threads))
        elif not flight.alone:
            self.isolated.extend((pos, pos + 1, 0, deaths) for pos in range(start, stop))
        elif attempt < self.retries:
            self.isolated.append((start, stop, attempt + 1, flight.deaths))
        else:
            self.complete([self._failed_chunk(flight, exc)])

    def _failed_chunk(self, flight: Flight, exc: BaseException | None) -> ChunkResult:
        start, stop = flight.start, flight.stop
        alone = flight.attempt + 1
        reason = exc if exc is not None else RuntimeError("the chunk was cancelled by the cluster")
        wrapped = RuntimeError(
            f"this item's task failed {flight.deaths + alone} times, the last {alone} with the "
            f"item run alone, as when it kills its worker ({type(reason).__name__}: {reason})"
        )
        wrapped.__traceback__ = getattr(reason, "__traceback__", None)
        errors = [
            ItemError.from_exception(self.job.indices[pos], pos, wrapped, "unknown")
            for pos in range(start, stop)
        ]
        return ChunkResult(start, [None] * (stop - start), errors, "unknown", 0.0)


def pieces(start: int, stop: int, parts: int) -> list[tuple[int, int]]:
    """Cut positions ``start:stop`` into at most ``parts`` runs of near-equal length.

    Examples
    --------
    >>> pieces(0, 10, 3)
    [(0, 4), (4, 7), (7, 10)]
    >>> pieces(5, 7, 4)
    [(5, 6), (6, 7)]
    """
    count = max(1, min(parts, stop - start))
    size, extra = divmod(stop - start, count)
    out: list[tuple[int, int]] = []
    for part in range(count):
        end = start + size + (part < extra)
        out.append((start, end))
        start = end
    return out
