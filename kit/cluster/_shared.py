"""The cluster's own ledger of envs and runs: a scheduler plugin every client of it asks.

Clients of one scheduler (a class on one cluster, a sweep's trials, two
notebooks) share one env per worker when their provider configs agree. So
whether an env may go is the cluster's business, not one client's: each run
holds its env in the scheduler's :class:`ClusterLedger` while it runs; an
env goes only when no client's run holds it (past ``parallel.max_envs``,
the least recently used across all clients first; or once idle for
``parallel.env_idle_timeout`` seconds); a client that goes away lets go of
what it held. The scheduler tears envs down itself, so no client ever
unregisters an env another one holds.

The ledger also seats the runs (:class:`~kit.cluster._run_book.RunBook`):
each run's fair share of the worker threads, what a teacher lists with
``kit cluster runs`` and stops with ``kit cluster cancel``.

The functions below run on the scheduler through ``client.run_on_scheduler``;
each decision is taken on the scheduler's event loop between two awaits, so
two clients never decide at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin
from tornado.ioloop import PeriodicCallback

from kit.cluster._env_ledger import EnvLedger
from kit.cluster._keys import DIGEST, digest
from kit.cluster._run_book import RunBook, Seat

#: The ledger's name among the scheduler's plugins.
LEDGER = "kit-ledger"
#: Envs are Kit's worker plugins whose names start so.
ENV_PREFIX = "kit-env:"
#: How often the scheduler looks for envs idle past their timeout, in ms.
EXPIRY_CHECK_MS = 1000


class ClusterLedger(SchedulerPlugin):
    """The scheduler's ledger: holds on envs by every client, and their teardown.

    ``idempotent``: the first client of a scheduler registers it; a second
    registration keeps the one there, with its holds.
    """

    idempotent = True
    name = LEDGER

    def __init__(self) -> None:
        self.envs = EnvLedger()
        self.runs = RunBook()
        #: Env name -> the users whose runs held it since it was registered (its owners).
        self.users: dict[str, set[str]] = {}
        #: The digest of the class's teacher token and who claimed it, once claimed.
        self.teacher: tuple[str, str] | None = None
        #: Each attendee's exercises: the latest, each one's check outcome, when last heard.
        self.attendees: dict[str, dict[str, Any]] = {}
        self._left: dict[str, asyncio.Event] = {}
        self._expiry: PeriodicCallback | None = None
        self.scheduler: Any = None

    async def start(self, scheduler: Any) -> None:
        # Nothing awaited: registered between two of the scheduler's awaits, so two
        # clients' registrations cannot both find no ledger and both add one.
        self.scheduler = scheduler
        self._expiry = PeriodicCallback(self._expire, EXPIRY_CHECK_MS)
        self._expiry.start()

    async def close(self) -> None:
        if self._expiry is not None:
            self._expiry.stop()

    def remove_client(self, scheduler: Any, client: str) -> None:
        """Let go of what a client held: it went away (closed, or its process died)."""
        # Added with scheduler.add_plugin, whose start Dask never calls: the scheduler
        # is known from here on too.
        self.scheduler = self.scheduler or scheduler
        self.envs.drop_client(client, time.time())
        self.runs.drop_client(client, threads=self.threads())

    def threads(self) -> int:
        """Return the worker threads of the cluster now."""
        return _threads(self.scheduler)

    def clients(self) -> int:
        """Return how many clients are connected now (Dask's own not counted)."""
        return sum(1 for client in self.scheduler.clients if client != "fire-and-forget")

    def present(self) -> list[str]:
        """Return the envs registered on the cluster now."""
        return [name for name in self.scheduler.worker_plugins if name.startswith(ENV_PREFIX)]

    def on_workers(self) -> list[str]:
        """Return the envs on the workers now: registered, or still being torn down.

        Dask's scheduler forgets a plugin before its workers have run its
        teardown; until that teardown has ended, the env is still there.
        """
        return sorted({*self.present(), *self.envs.leaving})

    async def until_gone(self, name: str) -> None:
        """Wait while env ``name`` is being torn down."""
        while name in self.envs.leaving:
            await self._left.setdefault(name, asyncio.Event()).wait()

    async def tear_down(self, names: list[str]) -> list[str]:
        """Unregister the claimed envs ``names`` from every worker; return what failed, said."""
        failures: list[str] = []
        try:
            for name in names:
                if name not in self.scheduler.worker_plugins:
                    continue
                try:
                    replies = await self.scheduler.unregister_worker_plugin(None, name)
                except Exception as exc:  # a worker went away meanwhile, and its env with it
                    failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                failures += [
                    str(reply.get("text") or reply.get("exception") or reply)
                    for reply in replies.values()
                    if isinstance(reply, dict) and reply.get("status") == "error"
                ]
        finally:
            self.envs.gone(names)
            for name in names:
                self.users.pop(name, None)
                event = self._left.pop(name, None)
                if event is not None:
                    event.set()
        return failures

    async def _expire(self) -> None:
        if self.scheduler.plugins.get(self.name) is not self:
            # Unregistered, or replaced by another ledger (which holds the envs now):
            # this one's timer stops, and tears nothing down.
            if self._expiry is not None:
                self._expiry.stop()
            return
        stale = self.envs.expired(time.time(), self.present())
        if stale:
            await self.tear_down(stale)


def ledger_of(scheduler: Any) -> ClusterLedger:
    """Return the scheduler's ledger (each Kit session registers it first thing)."""
    ledger = scheduler.plugins.get(LEDGER)
    if not isinstance(ledger, ClusterLedger):
        raise RuntimeError(
            "this scheduler has no Kit ledger; it is registered when a Kit session connects"
        )
    return ledger


async def hold_env(
    name: str,
    hold: str,
    client: str,
    max_envs: int,
    idle_timeout: float | None,
    user: str = "",
    dask_scheduler: Any = None,
) -> dict[str, Any]:
    """On the scheduler: hold env ``name`` for ``user``'s run; tear down the envs that must go.

    Returns the envs registered now (after the teardown), the cluster's
    worker threads, and what failed in tearing down (for a warning: the
    env being held must not fail for another env's ``teardown_env``).
    """
    ledger = ledger_of(dask_scheduler)
    check_hold(name, hold, client, max_envs, idle_timeout, user, dask_scheduler)
    await ledger.until_gone(name)
    stale = ledger.envs.hold(
        name,
        hold,
        client,
        time.time(),
        present=ledger.present(),
        max_envs=max_envs,
        idle_timeout=idle_timeout,
    )
    if user:
        ledger.users.setdefault(name, set()).add(user)
    failures = await ledger.tear_down(stale) if stale else []
    return {
        "plugins": list(dask_scheduler.worker_plugins),
        "threads": sum(ws.nthreads for ws in dask_scheduler.workers.values()),
        "failures": failures,
    }


async def release_env(hold: str, drop: bool = False, dask_scheduler: Any = None) -> None:
    """On the scheduler: a run lets go of its env; with ``drop``, it goes if nobody holds it.

    ``drop`` is for a build given up on (cancelled, timed out, failed):
    workers still building it drop it when the build ends, unless another
    client's run holds it meanwhile.
    """
    ledger = ledger_of(dask_scheduler)
    if not isinstance(hold, str) or not isinstance(drop, bool):
        raise TypeError(f"releasing an env takes a hold id and a bool, got {hold!r}, {drop!r}")
    name = ledger.envs.release(hold, time.time())
    if drop and name is not None and ledger.envs.claim(name):
        await ledger.tear_down([name])


def held_envs(dask_scheduler: Any = None) -> dict[str, list[str]]:
    """On the scheduler: each env on the workers now, with the clients holding it."""
    with contextlib.suppress(RuntimeError):
        ledger = ledger_of(dask_scheduler)
        return {name: ledger.envs.holders(name) for name in ledger.on_workers()}
    return {name: [] for name in dask_scheduler.worker_plugins if name.startswith(ENV_PREFIX)}


def join_run(seat: dict[str, Any], dask_scheduler: Any = None) -> dict[str, int]:
    """On the scheduler: seat a run; return the cluster's threads, its share and the runs."""
    ledger = ledger_of(dask_scheduler)
    checked = Seat(**seat)  # raises on a bad seat: nothing is stored
    if checked.client not in dask_scheduler.clients:
        raise ValueError(
            f"a run's seat names client {checked.client!r}, which is not connected to this "
            "scheduler: a run is seated by the client that runs it"
        )
    threads = ledger.threads()
    share = ledger.runs.join(checked, threads=threads, now=time.time())
    return {
        "threads": threads,
        "share": share,
        "runs": len(ledger.runs.seats),
        "clients": ledger.clients(),
    }


def report_run(
    run_id: str,
    done: int,
    failed: int,
    chunks_out: int,
    first_error: str = "",
    dask_scheduler: Any = None,
) -> dict[str, Any]:
    """On the scheduler: take a run's progress; return its share, the runs, a cancel request."""
    ledger = ledger_of(dask_scheduler)
    threads = ledger.threads()
    seat = ledger.runs.report(
        run_id,
        done=done,
        failed=failed,
        chunks_out=chunks_out,
        threads=threads,
        now=time.time(),
        first_error=first_error,
    )
    if seat is None:  # the ledger was registered again (a restarted scheduler): sit down anew
        return {"seated": False}
    return {
        "threads": threads,
        "share": seat.share,
        "runs": len(ledger.runs.seats),
        "clients": ledger.clients(),
        "cancel_by": seat.cancel_by,
        "seated": True,
    }


def leave_run(run_id: str, dask_scheduler: Any = None) -> None:
    """On the scheduler: a run ended; the others share its threads."""
    ledger = ledger_of(dask_scheduler)
    ledger.runs.leave(run_id, threads=ledger.threads())


def list_runs(dask_scheduler: Any = None) -> dict[str, Any]:
    """On the scheduler: every run seated now, the envs with their holders, the threads."""
    try:
        ledger = ledger_of(dask_scheduler)
    except RuntimeError:  # no Kit session ever connected: no run, no env of Kit's
        return {"threads": _threads(dask_scheduler), "runs": [], "envs": {}}
    threads = ledger.threads()
    names = ledger.on_workers()
    memory = env_memory(dask_scheduler)
    return {
        "threads": threads,
        "runs": ledger.runs.listing(threads, time.time()),
        "attendees": {
            user: dict(seen, checks=dict(seen["checks"])) for user, seen in ledger.attendees.items()
        },
        "envs": {name: ledger.envs.holders(name) for name in names},
        "env_info": {
            name: {"users": sorted(ledger.users.get(name, ())), "memory": memory.get(name)}
            for name in names
        },
    }


def env_memory(scheduler: Any) -> dict[str, int]:
    """Return what each env took in memory on the worker where it took most, in bytes.

    From the events workers log after each build (:data:`~kit.cluster._plugin.ENV_EVENT`),
    kept by the scheduler: the listing asks no worker.
    """
    from kit.cluster._plugin import ENV_EVENT

    most: dict[str, int] = {}
    for _, event in scheduler.get_events(ENV_EVENT):
        if isinstance(event, dict) and isinstance(event.get("memory"), int):
            name = str(event.get("env"))
            most[name] = max(most.get(name, 0), event["memory"])
    return most


def cancel_run(run_id: str, key: str, dask_scheduler: Any = None) -> dict[str, Any]:
    """On the scheduler: ask run ``run_id`` (or the one its id starts with) to stop.

    ``key`` is the run's own key (its session holds it) or the class's
    teacher token; the seat names who cancelled from which of the two it
    was, never from what the caller says it is. The run reads the request
    at its next report (within a fraction of a second) and ends as
    cancelled, its completed items kept.

    Raises
    ------
    KeyError
        Naming the runs there are, when none or several match.
    PermissionError
        Naming the run's owner, when ``key`` is neither.
    """
    if not isinstance(run_id, str) or not run_id or not isinstance(key, str):
        raise TypeError(f"cancelling takes a run id and a key, got {run_id!r} and a {type(key)}")
    ledger = ledger_of(dask_scheduler)
    seat = ledger.runs.find(run_id)
    proof = digest(key)
    if seat.owner and secrets.compare_digest(proof, seat.owner):
        by = f"its owner ({seat.user})"
    elif ledger.teacher is not None and secrets.compare_digest(proof, ledger.teacher[0]):
        by = f"the teacher ({ledger.teacher[1]})"
    else:
        raise PermissionError(
            f"run {seat.run_id} is {seat.user}'s ({seat.host}, {seat.runner}): only its own "
            "notebook or the class's teacher may cancel it"
            + ("" if ledger.teacher else "; this class has no teacher yet (kit cluster claim)")
        )
    return ledger.runs.cancel(seat.run_id, by=by).as_dict()


#: Attendees a class's board keeps at most (one notebook's bad loop cannot fill it).
MOST_ATTENDEES = 1000


def note_exercise(user: str, exercise: str, outcome: str, dask_scheduler: Any = None) -> None:
    """On the scheduler: attendee ``user`` ran exercise ``exercise``'s check: ``outcome``.

    ``outcome`` is ``"passed"`` or what the check found wrong (its first
    line, never the check's code). The class board shows the latest of each.
    """
    for name, value, most in (
        ("user", user, 64),
        ("exercise", exercise, 16),
        ("outcome", outcome, 200),
    ):
        if not isinstance(value, str) or not value or len(value) > most:
            raise TypeError(f"a class note needs {name} as a string of 1 to {most} characters")
    ledger = ledger_of(dask_scheduler)
    if user not in ledger.attendees and len(ledger.attendees) >= MOST_ATTENDEES:
        raise ValueError(f"the class board holds {MOST_ATTENDEES} attendees already")
    seen = ledger.attendees.setdefault(user, {"exercise": exercise, "checks": {}, "seen": 0.0})
    seen["exercise"], seen["seen"] = exercise, time.time()
    seen["checks"][exercise] = outcome


def claim_teacher(token_digest: str, label: str, dask_scheduler: Any = None) -> str:
    """On the scheduler: make ``token_digest`` the class's teacher token; return who holds it.

    Once only: a second claim with another token is refused, naming who
    claimed first (the same token again is a no-op).
    """
    if not isinstance(token_digest, str) or not DIGEST.fullmatch(token_digest):
        raise TypeError("claiming a class takes a token's digest (64 hex digits)")
    if not isinstance(label, str) or not label:
        raise TypeError(f"claiming a class takes who claims it, got {label!r}")
    ledger = ledger_of(dask_scheduler)
    if ledger.teacher is None:
        ledger.teacher = (token_digest, label)
    elif not secrets.compare_digest(ledger.teacher[0], token_digest):
        raise PermissionError(f"this class already has a teacher: {ledger.teacher[1]}")
    return ledger.teacher[1]


def check_hold(
    name: Any,
    hold: Any,
    client: Any,
    max_envs: Any,
    idle_timeout: Any,
    user: Any,
    scheduler: Any,
) -> None:
    """Refuse a hold whose arguments are bad before anything is stored (raise, naming it)."""
    if not isinstance(name, str) or not name.startswith(ENV_PREFIX):
        raise TypeError(f"an env hold names an env ({ENV_PREFIX}...), got {name!r}")
    if not isinstance(hold, str) or not hold:
        raise TypeError(f"an env hold needs a hold id, got {hold!r}")
    if not isinstance(user, str):
        raise TypeError(f"an env hold needs its user as a string, got {user!r}")
    if type(max_envs) is not int or max_envs < 1:
        raise TypeError(
            f"an env hold needs max_envs as a whole number of at least 1, got {max_envs!r}"
        )
    if idle_timeout is not None and (
        isinstance(idle_timeout, bool)
        or not isinstance(idle_timeout, (int, float))
        or not idle_timeout > 0
    ):
        raise TypeError(
            f"an env hold needs idle_timeout as seconds above 0 or None, got {idle_timeout!r}"
        )
    if client not in scheduler.clients:
        raise ValueError(
            f"an env hold names client {client!r}, which is not connected to this scheduler: "
            "an env is held by the client that runs on it"
        )


def _threads(scheduler: Any) -> int:
    return sum(ws.nthreads for ws in scheduler.workers.values())
