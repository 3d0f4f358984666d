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

What to send, send again or copy is decided by a
:class:`~kit._engine.policy.DispatchPolicy`; this loop only submits,
gathers and listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kit._base.errors import ProviderSetupError
from kit._base.waiting import WAIT_STEP
from kit._engine.plan import ChunkPlanner
from kit._engine.policy import (
    RESULT_LOST,
    DispatchPolicy,
    Flight,
    Isolated,
    Liveness,
    Overdue,
    ResultLost,
)
from kit._engine.spec import ChunkJob
from kit.cluster._seats import ClusterSeat
from kit.store._chunk_result import ChunkResult

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
        seat: ClusterSeat | None = None,
    ) -> None:
        self.client = client
        #: The run's seat on the cluster: its fair share of the threads, a cancel request.
        self.seat = seat
        self.job = job
        #: What to send, send again and copy: it decides each turn; this loop carries it out.
        self.policy = DispatchPolicy(planner, job.indices, retries, backups)
        #: Whether the cluster has workers and the client its scheduler; when to give up.
        self.liveness = Liveness(no_worker_timeout)
        if seat is not None:
            self.policy.company(seat.last.in_company)
        #: The event topic on which workers say a chunk will end early (see Overdue).
        self.overdue_topic = overdue_topic(job.run_id)
        self.complete = complete
        self._should_stop = should_stop
        self.arrived: queue.Queue[Any] = queue.Queue()
        #: Sends the chunk tasks; each future tells ``arrived`` when it is back.
        self.sender = TaskSender(client, env_name, job, planner, self.policy, self.arrived)
        self.clock = BusyClock()

    def should_stop(self) -> bool:
        """Whether to stop: a cancel, the stop policy, or a cancel asked for on the cluster."""
        return (self.seat is not None and self.seat.cancelled()) or self._should_stop()

    @property
    def in_flight(self) -> Mapping[str, Flight]:
        """The chunk tasks out, by key (read only: the policy keeps them)."""
        return self.policy.flights()

    # ---------------------------------------------------------------- loop
    def run(self) -> None:
        """Run until every chunk is done or the run must stop; cancel what is left.

        Each turn sends chunks until about two per worker thread are out, then
        takes back every chunk that came back in one gather and hands the
        completed ones to ``complete``.
        """
        policy = self.policy
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
                if policy.poll_due(time.perf_counter()):
                    self._poll()
                shared = self.seat is not None and self.seat.last.shared
                # What the policy decided for this turn: send again, alone, anew, as backups.
                # New chunks go in client.map calls of MAP_CHUNKS: the scheduler takes one
                # graph update for each, where a submit each costs one (512 one-item tasks
                # ran in 0.34 s sent by one map, 1.2 s sent one by one, on 256 slots).
                turn = policy.turn(stopping=self.should_stop(), arrival=arrival, shared=shared)
                for flight in turn.resend:
                    self.sender.relaunch(flight)
                if turn.isolate:
                    self._launch_isolated()
                if turn.send:
                    self.sender.launch_many(turn.send, turn.priority)
                if turn.back_up:
                    self.back_up()
                arrival = False
                self.liveness.connected()
                if not self.in_flight or self.should_stop():
                    return
                # Slots waiting for a probe to come back get one anyway when the wait ends.
                wake = policy.wake_in(time.perf_counter())
                try:
                    with self.clock.waiting():
                        first = self.arrived.get(
                            timeout=WAIT_STEP if wake is None else min(WAIT_STEP, wake)
                        )
                except queue.Empty:
                    if policy.poll_due(time.perf_counter()):
                        self._poll()
                        if policy.without_env():  # workers come and go: the list, again
                            self._route_around_missing_envs()
                    self.liveness.check_workers(time.perf_counter(), len(self.in_flight))
                    continue
                # Every chunk back that is in: one gather.
                futures = self._take_arrivals(first)
                flights = [self.in_flight[f.key] for f in futures if f.key in self.in_flight]
                if not flights:
                    continue  # cancelled twins
                arrival = True
                done = []
                connected = self.client.status == "running"
                for flight, outcome in zip(
                    flights, gather(self.client, flights, self.clock), strict=True
                ):
                    now = time.perf_counter()
                    chunk, cancel = policy.arrived(flight.key, outcome, now, connected)
                    if cancel:
                        self.client.cancel([f.future for f in cancel])
                    if chunk is not None:
                        done.append(chunk)
                if done:
                    self.complete(done)
                if len(policy.without_env()) != self.sender.shunned:
                    self._route_around_missing_envs()
                policy.driver_seconds(self.clock.per_chunk(len(flights)))
        finally:
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(self.overdue_topic)
            if self.in_flight:
                # A client whose scheduler is gone refuses; its futures are void anyway.
                with contextlib.suppress(Exception):
                    self.client.cancel([f.future for f in self.in_flight.values()])

    def _route_around_missing_envs(self) -> None:
        """Send chunks only to workers that have the env (see :meth:`TaskSender.route_around`)."""
        with contextlib.suppress(ConnectionError, OSError):  # the scheduler busy: next arrival
            self.sender.route_around(self.policy.without_env())

    def _launch_isolated(self) -> None:
        """Send items of lost chunks, each alone on a worker of its own, on every free worker."""
        if self.policy.placing():
            return  # asking the scheduler would change nothing: wait for that item
        try:
            known = self.client.scheduler_info()["workers"]
            processing = self.client.processing() if self.in_flight else {}
        except Exception:  # the scheduler is busy or gone: try at the next step
            return
        workers = {address: info.get("status", "running") for address, info in known.items()}
        for item in self.policy.isolated_sends(workers, processing):
            self.sender.launch(item, alone=True)

    def _wait_for_scheduler(self) -> None:
        """Wait one step for a lost scheduler to come back; raise once it will not.

        Distributed cancels every future when its client loses the scheduler,
        and tries to reconnect for its connect timeout before closing. The
        chunks it cancelled are sent again once it is back; until then nothing
        is sent.
        """
        closed = self.client.status in ("closing", "closed")
        address = getattr(self.client.scheduler, "address", None) or "its address"
        self.liveness.scheduler_lost(time.perf_counter(), closed, address)
        try:
            first = self.arrived.get(timeout=WAIT_STEP)
        except queue.Empty:
            return
        for future in self._take_arrivals(first):
            if future.key in self.in_flight:
                self.policy.cancelled_by_loss(future.key)

    def _poll(self) -> None:
        """Ask the scheduler how many threads the run may use now, and tell the policy.

        The cluster's threads, or with a seat on it, this run's fair share of
        them (reported with the run's progress); the scheduler busy or gone,
        the policy keeps its last count.
        """
        now = time.perf_counter()
        try:
            with self.clock.waiting():
                if self.seat is None:
                    threads: dict[str, int] = self.client.nthreads()
                    total, share = sum(threads.values()), None
                else:
                    said = self.seat.report(len(self.in_flight))
                    total, share = said.threads, said.share
                    self.policy.company(said.in_company)
        except Exception:
            return
        self.liveness.seen(total, now)
        self.policy.threads_seen(total, share)

    def _take_arrivals(self, first: Any) -> list[Any]:
        """``first`` and every other arrival queued: the futures; Overdue words act here."""
        got = [first]
        while not self.arrived.empty():
            got.append(self.arrived.get_nowait())
        futures = []
        for item in got:
            if isinstance(item, Overdue):
                self.policy.overdue(item)
            else:
                futures.append(item)
        return futures

    def _overdue_event(self, event: tuple[float, Any]) -> None:
        """On the client's loop: pass a worker's Overdue word to the run's thread."""
        msg = event[1]
        self.arrived.put(Overdue(str(msg["key"]), int(msg["end"])))

    def back_up(self) -> None:
        """Copy chunks queued behind another one while a worker idles, when it pays."""
        try:
            with self.clock.waiting():
                processing: dict[str, list[str]] = self.client.processing()
        except Exception:
            return
        for flight in self.policy.to_copy(processing):
            item = Isolated(flight.start, flight.stop, flight.attempt, flight.deaths)
            self.sender.launch(item, alone=False, backup=True)


class TaskSender:
    """Send chunk tasks to the cluster, named so a worker's word and a key say which is which.

    Every task is :func:`~kit._engine.task.run_chunk` with the run's shared
    keywords; its future, once back, is put on ``arrived`` for the loop. Each
    send has a key of its own, a chunk sent again too: distributed's ``submit``
    gives back the future it still holds for a key it knows, so a chunk sent
    again under its last task's key would come back as that task did
    (cancelled, or failed) and never run.
    """

    def __init__(
        self,
        client: Any,
        env_name: str,
        job: ChunkJob,
        planner: ChunkPlanner,
        policy: DispatchPolicy,
        arrived: queue.Queue[Any],
    ) -> None:
        self.client = client
        self.job = job
        self.planner = planner
        self.policy = policy
        self.arrived = arrived
        # Here, not at the top: importing distributed would make `import kit` slow.
        from kit._engine.task import run_chunk

        self._task = run_chunk
        self._sends = itertools.count()
        #: The workers chunks may go to (None: any), and how many are left out.
        self.allowed: list[str] | None = None
        self.shunned = 0
        # What every chunk task shares, as run_chunk's keywords.
        self._shared = {
            "forward": job.forward,
            "env_name": env_name,
            "forward_spec": job.forward_spec,
            "explicit": job.explicit,
            "batch": job.batch_size,
            "batch_by": job.batch_by,
            "overdue_topic": overdue_topic(job.run_id),
        }

    def launch(self, item: Isolated, alone: bool, backup: bool = False) -> None:
        """Send positions ``item.start:item.stop`` as one task (to its worker, if still there)."""
        start, stop, worker = item.start, item.stop, item.worker
        key = self._key(start, stop, item.deaths, item.attempt, alone, backup)
        future = self.client.submit(
            self._task,
            # A range stays a range: a few bytes to ship whatever the chunk's size.
            self.job.indices[start:stop],
            start,
            None if alone else self.planner.budget(stop - start),
            key=key,
            pure=False,
            # Loose, always: if those workers are gone (a worker started again has a new
            # address), another runs it rather than none ever, and says if it lacks the env.
            workers=self.allowed if worker is None else [worker],
            allow_other_workers=worker is not None or self.allowed is not None,
            **self._shared,
        )
        self._sent(
            Flight(start, stop, item.attempt, alone, key, future, worker=worker, deaths=item.deaths)
        )

    def launch_many(self, spans: Sequence[tuple[int, int, int]], priority: int = 0) -> None:
        """Send each ``(start, stop, deaths)`` as a first attempt, ``MAP_CHUNKS`` per map."""
        for first in range(0, len(spans), MAP_CHUNKS):
            part = spans[first : first + MAP_CHUNKS]
            keys = [self._key(start, stop, deaths, 0, False, False) for start, stop, deaths in part]
            futures = self.client.map(
                self._task,
                [self.job.indices[start:stop] for start, stop, _ in part],
                [start for start, _, _ in part],
                [self.planner.budget(stop - start) for start, stop, _ in part],
                key=keys,
                pure=False,
                priority=priority,
                workers=self.allowed,
                allow_other_workers=self.allowed is not None,  # loose, as in launch
                **self._shared,
            )
            for (start, stop, deaths), key, future in zip(part, keys, futures, strict=True):
                self._sent(Flight(start, stop, 0, False, key, future, deaths=deaths))

    def route_around(self, missing: Mapping[str, str]) -> None:
        """Send chunks only to workers not in ``missing`` (without the env); fail if none is.

        A worker whose env build failed even when a task tried it again gets
        no more of this run's chunks; workers that join later build the env
        as they start, so they are welcome.

        Raises
        ------
        ProviderSetupError
            Saying why, when no worker of the cluster has the env.
        """
        known = list(self.client.scheduler_info(n_workers=-1)["workers"])
        good = [address for address in known if address not in missing]
        if not good:
            raise ProviderSetupError(
                f"no worker of the cluster has the run's env: {next(iter(missing.values()))}"
            )
        self.allowed, self.shunned = good, len(missing)

    def _key(
        self, start: int, stop: int, deaths: int, attempt: int, alone: bool, backup: bool
    ) -> str:
        return (
            f"kit-{self.job.run_id}-{start}-{stop}-{deaths}-{attempt}-{int(alone)}"
            f"-{next(self._sends)}{'-b' if backup else ''}"
        )

    def _sent(self, flight: Flight) -> None:
        self.policy.sent(flight)
        flight.future.add_done_callback(self.arrived.put)

    def relaunch(self, flight: Flight) -> None:
        """Send a chunk the cluster cancelled (no worker died) again, as it was."""
        item = Isolated(flight.start, flight.stop, flight.attempt, flight.deaths, flight.worker)
        self.launch(item, flight.alone)


#: How often, in seconds, a gather looks whether a result it waits for left with its worker.
LOST_CHECK = 0.05
#: A distributed future's statuses (its own words, not a run's): finished or lost, a chunk
#: came back; lost or pending again, its result left with its worker before the gather.
HELD = ("finished", "lost")
NOT_HELD = ("lost", "pending")


def gather(
    client: Any, flights: list[Flight], clock: BusyClock
) -> list[ChunkResult | BaseException | ResultLost | None]:
    """Fetch the results of chunks that came back: one call for all that finished.

    A chunk whose result went with its worker (one retired or lost after the
    chunk ended) is :data:`RESULT_LOST`, never waited for: distributed's own
    gather waits until the cluster has computed it again, which on a cluster
    left without workers is forever. One that failed gives its exception,
    one the cluster cancelled None; a result that will not come over (it
    cannot be unpickled here) gives the error, chunk by chunk.
    """
    held = {f.key: f.future for f in flights if f.future.status in HELD}
    got: dict[str, Any] = {}
    lost: set[str] = set()
    try:
        with clock.waiting():
            got, lost = client.sync(_gather_unless_lost, client, held) if held else ({}, set())
    except Exception:
        for key, future in held.items():  # one result would not come: the others still do
            try:
                with clock.waiting():
                    one, gone = client.sync(_gather_unless_lost, client, {key: future})
                got.update(one)
                lost |= gone
            except Exception as exc:
                got[key] = exc
    out: list[ChunkResult | BaseException | ResultLost | None] = []
    for flight in flights:
        if flight.key in lost:
            out.append(RESULT_LOST)
        elif got.get(flight.key) is not None:
            out.append(got[flight.key])
        elif flight.future.status == "error":
            out.append(flight.future.exception())
        else:
            out.append(None)  # cancelled by the cluster
    return out


async def _gather_unless_lost(
    client: Any, futures: dict[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """Gather ``futures`` on the client's loop; cancel and name those whose result was lost.

    A result lost before or during the gather is cancelled (so the gather
    skips it, and the cluster does not compute that task again: the run
    sends the chunk anew) and its key returned in the second value.
    """
    lost: set[str] = set()
    gathering = asyncio.ensure_future(client.gather(futures, errors="skip", asynchronous=True))
    while True:
        gone = [f for key, f in futures.items() if key not in lost and f.status in NOT_HELD]
        if gone:
            lost.update(f.key for f in gone)
            await client.cancel(gone, asynchronous=True)
        done, _ = await asyncio.wait({gathering}, timeout=LOST_CHECK)
        if done:
            return gathering.result(), lost


def overdue_topic(run_id: str) -> str:
    """Return the event topic on which a run's workers say a chunk ends early (see Overdue)."""
    return f"kit-overdue-{run_id}"
