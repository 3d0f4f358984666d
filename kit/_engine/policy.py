"""What to send, what to send again and what to copy: the dispatcher's decisions, without Dask.

:class:`DispatchPolicy` keeps the chunks out and takes observations (a chunk
came back, a worker says a chunk ends early, the cluster has so many
threads, which worker runs what) and returns decisions: the spans to send,
the pieces of lost chunks to send again and where, the backups worth a copy,
the copies to cancel, a chunk of items that failed for good. The loop in
:mod:`kit._engine.dask` only submits, gathers and listens, as distributed's
``Adaptive`` acts on what ``AdaptiveCore`` decides. Tested without a cluster
(``tests/engine/test_policy.py``), like :class:`~kit._engine.plan.ChunkPlanner`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from kit._base.errors import EnvMissing, NoWorkersError, SchedulerLostError
from kit._engine.pace import Pacing
from kit._engine.plan import ChunkPlanner
from kit.result import Index, ItemError
from kit.store._chunk_result import ChunkResult

#: A backup copy gains at most the queued chunk's own time; below this it is not worth one.
BACKUP_MIN_SECONDS = 0.02
#: ...and that time must be this many round trips, the price of sending a copy.
BACKUP_ROUND_TRIPS = 4


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
    #: The task's key (its future's), unique in the run.
    key: str
    #: The loop's handle on the task (a Dask future); the policy never looks inside.
    future: Any = None
    sent: float = field(default_factory=time.perf_counter)
    #: The worker an item run alone was sent to (None: the scheduler chose).
    worker: str | None = None
    #: Worker deaths these positions went through before this task.
    deaths: int = 0


class ResultLost:
    """A chunk's outcome when it finished but its result left with its worker."""

    def __repr__(self) -> str:
        return "RESULT_LOST"


#: The one :class:`ResultLost`: the chunk goes again as it was (its items did not fail).
RESULT_LOST = ResultLost()


@dataclass(frozen=True)
class Isolated:
    """Positions of a lost chunk to run again alone, on ``worker`` (None: any)."""

    start: int
    stop: int
    attempt: int
    deaths: int
    worker: str | None = None


class Recovery:
    """Lost chunks: their pieces to spread over the workers, their items to run alone.

    Examples
    --------
    >>> recovery = Recovery(range(8), retries=0)
    >>> recovery.lost(Flight(0, 4, 0, False, key="a"), None, threads=2)  # its worker died
    >>> list(recovery.spread)
    [(0, 2), (2, 4)]
    >>> recovery.lost(Flight(0, 2, 0, False, key="b", deaths=1), None, threads=2)  # again
    >>> [(item.start, item.stop) for item in recovery.isolated]
    [(0, 1), (1, 2)]
    """

    def __init__(self, indices: Sequence[Index], retries: int) -> None:
        self.indices = indices
        self.retries = retries
        # Pieces of chunks lost once with a worker, sent again spread over the
        # workers as (start, stop); lost again, their items go alone (see lost()).
        self.spread: deque[tuple[int, int]] = deque()
        # Items run again one by one, alone, so an item that kills its worker is
        # named by its next death.
        self.isolated: deque[Isolated] = deque()
        #: Workers without the run's env (built again once there, in vain), and why.
        self.no_env: dict[str, str] = {}

    def placing(self, in_flight: Mapping[str, Flight]) -> bool:
        """Whether an item run alone waits for the scheduler to place it (no worker was free)."""
        return any(f.alone and f.worker is None for f in in_flight.values())

    def sends(
        self,
        in_flight: Mapping[str, Flight],
        workers: Mapping[str, str],
        processing: Mapping[str, Sequence[str]],
    ) -> list[Isolated]:
        """Return the lost items to send now, each alone on a free worker of ``workers``.

        ``in_flight`` holds the tasks out, ``workers`` maps each worker's
        address to its status, ``processing`` to the task keys on it. A
        worker is free when none of this run's tasks is on it: chunks sent
        before drain first. Alone on its worker, an item is named by that
        worker's death.
        """
        if self.placing(in_flight):
            return []  # an item the scheduler places itself: wait for it
        occupied = {f.worker for f in in_flight.values() if f.alone}
        assigned: set[str] = set()
        for worker, keys in processing.items():
            ours = [str(k) for k in keys if str(k) in in_flight]
            assigned.update(ours)
            if ours:
                occupied.add(worker)
        if any(key not in assigned for key, f in in_flight.items() if not f.alone):
            return []  # a chunk not on a worker yet could land beside an item: wait
        free: list[str | None] = [
            address
            for address, status in workers.items()
            if address not in occupied and status == "running"
        ]
        if not free and not in_flight:
            free = [None]  # none known now: one item, placed when a worker joins
        out = []
        for place in free:
            if not self.isolated:
                break
            item = self.isolated.popleft()
            out.append(Isolated(item.start, item.stop, item.attempt, item.deaths, place))
        return out

    def lost(self, flight: Flight, exc: BaseException | None, threads: int) -> ChunkResult | None:
        """Decide what to do with a chunk whose task failed (its worker died, say).

        A chunk lost for the first time is cut into one piece per worker
        thread (``threads``: the most the run has seen), sent again like any
        chunk: the loss costs about the chunk's own time over the number of
        workers. A piece (or a one-item chunk)
        lost again may hold an item that kills its worker: each of its items
        runs again alone, all workers at once with nothing else in flight, so
        the next death names the item. That item gets ``retries`` more
        attempts, then comes back as a chunk of failed items (to fold in);
        every other item runs. With the scheduler failing a task at its first worker death, a
        killing item costs at most ``retries + 3`` worker deaths.
        """
        start, stop, attempt = flight.start, flight.stop, flight.attempt
        if isinstance(exc, EnvMissing):
            # Not the items' fault: they go again, to workers that have the env.
            self.no_env[exc.worker] = str(exc)
            self.spread.appendleft((start, stop))
            return None
        died_on = getattr(getattr(exc, "last_worker", None), "address", None)
        if flight.alone and flight.worker is not None and died_on not in (None, flight.worker):
            # Its worker was gone and another ran it, maybe beside an item that kills:
            # no proof against this one, so it goes again, uncharged.
            self.isolated.appendleft(Isolated(start, stop, attempt, flight.deaths))
            return None
        deaths = flight.deaths + 1
        if not flight.alone and flight.deaths == 0 and stop - start > 1:
            self.spread.extend(pieces(start, stop, threads))
        elif not flight.alone:
            self.isolated.extend(Isolated(pos, pos + 1, 0, deaths) for pos in range(start, stop))
        elif attempt < self.retries:
            self.isolated.append(Isolated(start, stop, attempt + 1, flight.deaths))
        else:
            return self.failed_chunk(flight, exc)
        return None

    def failed_chunk(self, flight: Flight, exc: BaseException | None) -> ChunkResult:
        """Return ``flight``'s items as failed, saying why: an item that kills its worker."""
        start, stop = flight.start, flight.stop
        alone = flight.attempt + 1
        reason = exc if exc is not None else RuntimeError("the chunk was cancelled by the cluster")
        wrapped = RuntimeError(
            f"this item's task failed {flight.deaths + alone} times, the last {alone} with the "
            f"item run alone, as when it kills its worker ({type(reason).__name__}: {reason})"
        )
        wrapped.__traceback__ = getattr(reason, "__traceback__", None)
        errors = [
            ItemError.from_exception(self.indices[pos], pos, wrapped, "unknown")
            for pos in range(start, stop)
        ]
        return ChunkResult(start, [None] * (stop - start), errors, "unknown", 0.0)


class Liveness:
    """Whether the cluster still has workers and the client its scheduler; when to give up.

    >>> alive = Liveness(no_worker_timeout=10.0)
    >>> alive.seen(total=0, now=0.0); alive.check_workers(now=5.0, waiting=2)  # not yet
    >>> alive.check_workers(now=10.0, waiting=2)
    Traceback (most recent call last):
    ...
    kit.errors.NoWorkersError: the cluster has had no worker for 10 s ...
    """

    def __init__(self, no_worker_timeout: float | None) -> None:
        self.no_worker_timeout = no_worker_timeout
        # When the cluster was last seen without a worker, or without its scheduler.
        self._empty_since: float | None = None
        self._lost_since: float | None = None

    def seen(self, total: int, now: float) -> None:
        """Take the count of the cluster's worker threads now."""
        if total:
            self._empty_since = None
        elif self._empty_since is None:
            self._empty_since = now

    def check_workers(self, now: float, waiting: int) -> None:
        """Raise once the cluster has had no worker for ``no_worker_timeout`` seconds."""
        if self.no_worker_timeout is None or self._empty_since is None:
            return
        if now - self._empty_since >= self.no_worker_timeout:
            raise NoWorkersError(
                f"the cluster has had no worker for {self.no_worker_timeout:g} s "
                f"(parallel.startup_timeout) with {waiting} chunk(s) waiting; "
                "completed chunks are kept: check the workers' logs (an item that kills "
                "every worker, jobs the queue ended), then run again to resume"
            )

    def scheduler_lost(self, now: float, closed: bool, address: str) -> None:
        """Take a step without a scheduler; raise once it will not come back.

        A closed client, or ``no_worker_timeout`` seconds without a scheduler,
        ends the run: completed chunks are stored already.
        """
        if self._lost_since is None:
            self._lost_since = now
        gone = now - self._lost_since
        limit = self.no_worker_timeout
        if closed or (limit is not None and gone >= limit):
            raise SchedulerLostError(
                f"the scheduler at {address} went away during the run (no connection for "
                f"{gone:.0f} s); the chunks completed before are kept: start the scheduler "
                "again (or check its machine and network), then run again to resume"
            )

    def connected(self) -> None:
        """Take a step with the scheduler there."""
        self._lost_since = None


#: Work in a chunk at most, in seconds, while other clients share the cluster: a run that
#: starts late waits for slots to free, one every SHARED_CHUNK_SECONDS / threads.
SHARED_CHUNK_SECONDS = 0.05
#: At most this often, the loop asks the scheduler how many threads the run may use.
CAPACITY_CHECK = 0.2


class Capacity:
    """How many worker threads a run plans for, when to ask again, and how long chunks aim at.

    Examples
    --------
    >>> from kit._engine.plan import ChunkPlanner
    >>> capacity = Capacity(ChunkPlanner([(0, 8)], n_workers=8))
    >>> capacity.seen(8), capacity.seen(8, share=3), capacity.most_threads
    (8, 3, 8)
    """

    def __init__(self, planner: ChunkPlanner) -> None:
        self.planner = planner
        self.threads = planner.n_workers
        # The most worker threads seen in this run: a lost chunk is cut for them, as a
        # killed worker's nanny starts it again in a moment.
        self.most_threads = self.threads
        # When the loop last asked the scheduler for the run's threads (it just did, to start).
        self._polled = time.perf_counter()
        # How much work a chunk aims at alone; less while other clients share the cluster.
        self._target = planner.target_seconds

    def poll_due(self, now: float) -> bool:
        """Whether to ask the scheduler for the run's threads now (every CAPACITY_CHECK s)."""
        if now - self._polled < CAPACITY_CHECK:
            return False
        self._polled = now
        return True

    def company(self, shared: bool) -> None:
        """Keep chunks short while other clients are connected, as long as usual alone."""
        short = min(SHARED_CHUNK_SECONDS, self._target)
        self.planner.target_seconds = short if shared else self._target

    def seen(self, total: int, share: int | None = None) -> int:
        """Take the cluster's worker threads now; return how many to plan for (at least 1).

        ``share`` is this run's fair share of them when other runs use the
        cluster too: the run plans for that many.
        """
        # No worker at all (all left): keep one chunk out, it waits on the scheduler.
        self.threads = max(1, total if share is None else min(total, share))
        self.most_threads = max(self.most_threads, self.threads)
        self.planner.n_workers = self.threads
        return self.threads


@dataclass
class Turn:
    """What the dispatch loop does in one turn, as the policy decided it.

    The loop only carries it out (as distributed's ``Adaptive.adapt`` carries
    out what ``AdaptiveCore.recommendations`` returns): it never reads or
    writes the policy's or the planner's state itself.

    Attributes
    ----------
    resend
        Chunks the cluster cancelled when the client lost its scheduler: sent
        again as they were.
    isolate
        Whether to send lost items, each alone, on the workers free now.
    send
        New spans ``(start, stop, deaths)`` to send, lost pieces first.
    priority
        1 for a run below its fair share of a shared cluster (it goes ahead
        of other runs' queued chunks), else 0.
    back_up
        Whether to look for idle workers to copy queued chunks onto.
    """

    resend: list[Flight] = field(default_factory=list)
    isolate: bool = False
    send: list[tuple[int, int, int]] = field(default_factory=list)
    priority: int = 0
    back_up: bool = False


class DispatchPolicy:
    """The chunks out, and what to do as they come back, are lost, or run late.

    Examples
    --------
    >>> from kit._engine.plan import ChunkPlanner
    >>> planner = ChunkPlanner([(0, 8)], n_workers=2, chunk_size=4)
    >>> policy = DispatchPolicy(planner, range(8), retries=1)
    >>> policy.to_send(room=4)
    [(0, 4, 0), (4, 8, 0)]
    >>> policy.sent(Flight(0, 4, 0, False, key="a"))
    >>> policy.arrived("a", None, now=1.0, connected=True)  # its worker died: cut for 2 threads
    (None, [])
    >>> policy.to_send(room=4)
    [(0, 2, 1), (2, 4, 1)]
    """

    def __init__(
        self,
        planner: ChunkPlanner,
        indices: Sequence[Index],
        retries: int,
        backups: str = "auto",
    ) -> None:
        self.planner = planner
        #: Lost chunks: pieces to spread, items to run alone.
        self.recovery = Recovery(indices, retries)
        self.backups = backups
        self.in_flight: dict[str, Flight] = {}
        # Keys of the copies of each (start, stop) out at once (a chunk and its backup).
        self.twins: dict[tuple[int, int], list[str]] = {}
        # Chunks the cluster cancelled when the client lost its scheduler: sent again as were.
        self.requeued: deque[Flight] = deque()
        #: Threads the run plans for, when to ask again, how long chunks aim at.
        self.capacity = Capacity(planner)
        self.planned_all = False
        # Least overhead between sending a chunk and having it back: a backup copy's price.
        self.round_trip = 0.01
        #: When slots wait for a probe; the first wave, that measures the cluster's task cost.
        self.pacing = Pacing()

    # ---------------------------------------------------------------- turns
    def turn(self, *, stopping: bool, arrival: bool, shared: bool) -> Turn:
        """Decide this turn: what to send again, alone, anew and as backups.

        About two chunks go out per worker thread the run may use. While
        lost items run alone, nothing else goes out. ``arrival`` says chunks
        came back last turn (backups are looked for only then); ``shared``
        says other runs share the cluster.

        >>> from kit._engine.plan import ChunkPlanner
        >>> policy = DispatchPolicy(ChunkPlanner([(0, 8)], n_workers=1, chunk_size=2), range(8), 1)
        >>> policy.turn(stopping=False, arrival=False, shared=True)
        Turn(resend=[], isolate=False, send=[(0, 2, 0), (2, 4, 0)], priority=1, back_up=False)
        """
        resend = list(self.requeued)
        self.requeued.clear()
        if self.isolating() or any(flight.alone for flight in resend):
            return Turn(resend, isolate=bool(self.recovery.isolated) and not stopping)
        out = len(self.in_flight) + len(resend)
        send = self.to_send(2 * self.threads - out, stopping)
        return Turn(
            resend,
            send=send,
            priority=1 if shared and out < self.threads else 0,
            back_up=(
                arrival
                and self.planned_all
                and self.backups == "auto"
                and worth_copying(self.in_flight, self.planner.seconds_per_item, self.round_trip)
            ),
        )

    def poll_due(self, now: float) -> bool:
        """Whether to ask the scheduler for the run's threads now (every CAPACITY_CHECK s)."""
        return self.capacity.poll_due(now)

    def company(self, shared: bool) -> None:
        """Keep chunks short while other clients are connected, as long as usual alone."""
        self.capacity.company(shared)

    def flights(self) -> Mapping[str, Flight]:
        """Return the chunk tasks out, by key (read only)."""
        return MappingProxyType(self.in_flight)

    # ------------------------------------------------------------- sending
    def to_send(
        self, room: int, stopping: bool = False, now: float | None = None
    ) -> list[tuple[int, int, int]]:
        """Return up to ``room`` spans ``(start, stop, deaths)`` to send: lost pieces first.

        On many threads, slots beyond the first probes wait for one (see
        :class:`~kit._engine.pace.Pacing`).
        """
        now = time.perf_counter() if now is None else now
        spans: list[tuple[int, int, int]] = []
        spread = self.recovery.spread
        while spread and len(spans) < room and not stopping:
            spans.append((*spread.popleft(), 1))
        planner = self.planner
        blind = self.pacing.sending(planner)
        while not self.planned_all and len(spans) < room and not stopping:
            if blind and self.pacing.waits(planner, now):
                break
            span = planner.next()
            if span is None:
                self.planned_all = True
                break
            spans.append((*span, 0))
        return spans

    def wake_in(self, now: float) -> float | None:
        """Seconds until slots waiting for a probe get one anyway (None: none waits)."""
        return self.pacing.wake_in(self.planner, now)

    def sent(self, flight: Flight) -> None:
        """Count ``flight`` as out."""
        self.in_flight[flight.key] = flight
        self.twins.setdefault((flight.start, flight.stop), []).append(flight.key)
        self.pacing.sent(flight.key)

    def isolating(self) -> bool:
        """Whether lost items run alone now: until every one is back, nothing else goes out."""
        return bool(self.recovery.isolated) or any(f.alone for f in self.in_flight.values())

    # ------------------------------------------------------------ capacity
    def threads_seen(self, total: int, share: int | None = None) -> int:
        """Take the cluster's worker threads now; return how many to plan for (see Capacity)."""
        return self.capacity.seen(total, share)

    @property
    def threads(self) -> int:
        """Worker threads the run plans for now."""
        return self.capacity.threads

    def placing(self) -> bool:
        """Whether an item is being placed alone now (asking the scheduler would change nothing)."""
        return self.recovery.placing(self.in_flight)

    def isolated_sends(
        self, workers: Mapping[str, str], processing: Mapping[str, Sequence[str]]
    ) -> list[Isolated]:
        """Return the lost items to send alone now, each to a free worker of ``workers``."""
        return self.recovery.sends(self.in_flight, workers, processing)

    def cancelled_by_loss(self, key: str) -> None:
        """Take back a task the loss of the scheduler cancelled: it goes again as it was."""
        self.requeued.append(self.settle(key))

    # ------------------------------------------------------------ arrivals
    def settle(self, key: str) -> Flight:
        """Forget the task ``key`` (it came back); return its flight."""
        flight = self.in_flight.pop(key)
        keys = self.twins[(flight.start, flight.stop)]
        keys.remove(key)
        if not keys:
            del self.twins[(flight.start, flight.stop)]
        return flight

    def twin_out(self, flight: Flight) -> bool:
        """Whether a copy of ``flight``'s chunk is still out."""
        return (flight.start, flight.stop) in self.twins

    def arrived(
        self,
        key: str,
        outcome: ChunkResult | BaseException | ResultLost | None,
        now: float,
        connected: bool,
    ) -> tuple[ChunkResult | None, list[Flight]]:
        """Take a task that came back: the chunk to fold in (if it completed) and copies to cancel.

        A chunk cut at its budget puts the rest back to plan; a task that failed
        is lost (see :meth:`lost`), unless the client lost its scheduler, which
        cancelled it, or its result (:data:`RESULT_LOST`) left with its worker:
        then it goes again as it was.
        """
        if key not in self.in_flight:
            return None, []  # its twin of this same batch was folded in and cancelled it
        flight = self.settle(key)
        if isinstance(outcome, ChunkResult):
            overhead = now - flight.sent - outcome.busy_seconds
            self.round_trip = max(1e-3, min(self.round_trip, overhead))
            copies = self.twins.pop((flight.start, flight.stop), [])
            cancel = [self.in_flight.pop(key) for key in copies]
            self.planner.observe(len(outcome.records), outcome.busy_seconds)
            measured = self.pacing.began(key, outcome)
            if measured is not None:
                self.planner.task_seconds = measured
            if outcome.stop < flight.stop:  # cut at its budget: the rest goes again
                self._again(outcome.stop, flight.stop, flight.deaths)
            return outcome, cancel
        if self.twin_out(flight):
            return None, []
        if isinstance(outcome, ResultLost) or (outcome is None and not connected):
            # Cancelled by the loss of the scheduler, or its result left with its worker:
            # its items did not fail. Again as it was (anywhere, if its worker left).
            self.requeued.append(flight if outcome is None else replace(flight, worker=None))
            return None, []
        return self.recovery.lost(flight, outcome, self.capacity.most_threads), []

    def without_env(self) -> Mapping[str, str]:
        """Workers that have not the run's env even when built again there, with why."""
        return MappingProxyType(self.recovery.no_env)

    def overdue(self, notice: Overdue) -> None:
        """Plan the positions after ``notice.end`` again now: their chunk ends there.

        The chunk's own result would say the same once its slow item is done;
        meanwhile the items behind it run elsewhere. A chunk with a copy out
        (a backup, which runs them all) waits for its result.
        """
        flight = self.in_flight.get(notice.key)
        if flight is None or flight.alone or not flight.start < notice.end < flight.stop:
            return  # back already, or nothing behind the slow item
        span = (flight.start, flight.stop)
        if len(self.twins[span]) > 1:
            return
        self.twins[(flight.start, notice.end)] = self.twins.pop(span)
        rest_stop, flight.stop = flight.stop, notice.end
        self._again(notice.end, rest_stop, flight.deaths)

    def _again(self, start: int, stop: int, deaths: int) -> None:
        if deaths:
            self.recovery.spread.appendleft((start, stop))
        else:
            self.planner.put_back(start, stop)
            self.planned_all = False

    def driver_seconds(self, sample: float) -> None:
        """Keep the planner told how long the driver's thread is busy per chunk."""
        old = self.planner.driver_seconds
        self.planner.driver_seconds = sample if old == 0.0 else 0.8 * old + 0.2 * sample

    # ------------------------------------------------------------- backups
    def to_copy(self, processing: Mapping[str, Sequence[str]]) -> list[Flight]:
        """Return chunks queued behind another one to copy while a worker idles (see copies)."""
        per_item = self.planner.seconds_per_item
        if per_item is None:
            return []
        return copies(self.in_flight, self.twins, per_item, self.round_trip, processing)


def worth_copying(
    in_flight: Mapping[str, Flight], per_item: float | None, round_trip: float
) -> bool:
    """Whether any chunk out is long enough to be worth a copy (see :func:`copies`).

    Only then is the scheduler asked which chunks wait queued: on short
    chunks the question would cost a round trip per arrival at a run's end.

    >>> worth_copying({"a": Flight(0, 10, 0, False, key="a")}, 0.001, round_trip=0.001)
    False
    >>> worth_copying({"a": Flight(0, 10, 0, False, key="a")}, 0.01, round_trip=0.001)
    True
    """
    if per_item is None:
        return False
    worth = max(BACKUP_MIN_SECONDS, BACKUP_ROUND_TRIPS * round_trip)
    return any(not f.alone and (f.stop - f.start) * per_item >= worth for f in in_flight.values())


def copies(
    in_flight: Mapping[str, Flight],
    twins: Mapping[tuple[int, int], Sequence[str]],
    per_item: float,
    round_trip: float,
    processing: Mapping[str, Sequence[str]],
) -> list[Flight]:
    """Return chunks queued behind another one to copy while a worker idles, when it pays.

    A copy gains at most the queued chunk's own time, and costs a round
    trip and maybe the same work twice: so only chunks expected to take
    well over a round trip are copied, never chunks already running, and
    each at most once. The first copy back wins; the other is cancelled.
    ``processing`` is what the scheduler says each worker has to run.
    """
    worth = max(BACKUP_MIN_SECONDS, BACKUP_ROUND_TRIPS * round_trip)
    idle = sum(1 for keys in processing.values() if not keys)
    order = {key: i for i, key in enumerate(in_flight)}
    queued: list[str] = []
    for keys in processing.values():
        ours = sorted((str(k) for k in keys if str(k) in order), key=order.__getitem__)
        queued.extend(ours[1:])  # a worker runs its chunks in the order sent
    out: list[Flight] = []
    for key in sorted(queued, key=order.__getitem__):
        if len(out) >= idle:
            break
        flight = in_flight[key]
        if flight.alone or len(twins[(flight.start, flight.stop)]) > 1:
            continue
        if (flight.stop - flight.start) * per_item >= worth:
            out.append(flight)
    return out


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
