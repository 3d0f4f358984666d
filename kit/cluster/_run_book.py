"""The runs on one cluster, their fair shares of its slots, and cancel requests: no I/O.

One :class:`RunBook` lives in the scheduler's Kit ledger (see
:mod:`kit.cluster._shared`). Each run on the cluster has a seat in it while
it runs: who started it (user and host), its runner and env, how far it is,
how many chunks it has out. The book gives each run its share of the
cluster's worker threads (attendees first, then each one's runs; the one
with clearly the least work left may take what it can use for a short burst:
:mod:`kit.cluster._shares`; a run's ``max_slots`` caps it, what a capped run
leaves goes to the others), and holds a teacher's cancel request until the
run reads it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kit.cluster._keys import DIGEST
from kit.cluster._shares import SEATS_PER_CLIENT, Shares


def check_count(name: str, value: Any, least: int = 0) -> None:
    """Raise unless ``value`` is a whole number of at least ``least`` (a bool is not one).

    >>> check_count("max_slots", "abc", least=1)
    Traceback (most recent call last):
    ...
    TypeError: a run's seat needs max_slots as a whole number of at least 1, got 'abc'
    """
    if type(value) is not int or value < least:
        raise TypeError(
            f"a run's seat needs {name} as a whole number of at least {least}, got {value!r}"
        )


#: The longest first error a run's seat keeps (a line on the class board).
ERROR_CHARS = 200


def check_error(value: Any) -> None:
    """Raise unless ``value`` is a line of text of at most :data:`ERROR_CHARS` characters.

    >>> check_error(3)
    Traceback (most recent call last):
    ...
    TypeError: a run's seat needs first_error as a line of at most 200 characters, got 3
    """
    if not isinstance(value, str) or len(value) > ERROR_CHARS or "\n" in value:
        raise TypeError(
            f"a run's seat needs first_error as a line of at most {ERROR_CHARS} characters, "
            f"got {value!r:.300}"
        )


@dataclass
class Seat:
    """One run on the cluster, as the teacher sees it.

    Attributes
    ----------
    run_id
        The run's id (names its Dask tasks).
    client
        The Dask client that started it.
    user, host
        Who started it, where: ``JUPYTERHUB_USER`` (else the login name) and the host name.
    runner
        The runner's class; ``env`` the env it holds.
    total, done, failed
        Its items, those finished (ok or failed), those failed.
    chunks_out
        Chunk tasks it has out now (running or queued on the cluster).
    share
        Worker threads it may keep busy now (its fair share).
    max_slots
        The cap its config set, or None.
    started, seen
        When it joined, when it last reported (scheduler clock, seconds).
    cancel_by
        Who asked for it to be cancelled, or None.
    owner
        The digest of the key only the run's session holds (its owner may cancel it by it).
    first_error
        The first item error that came back, in a line ("" while none has).
    """

    run_id: str
    client: str
    user: str
    host: str
    runner: str
    env: str
    total: int
    max_slots: int | None = None
    done: int = 0
    failed: int = 0
    chunks_out: int = 0
    share: int = 0
    started: float = 0.0
    seen: float = 0.0
    cancel_by: str | None = None
    owner: str = ""
    first_error: str = ""

    def __post_init__(self) -> None:
        # Checked before the book stores it: one bad seat in the book failed every run and
        # every command on the cluster until its scheduler restarted.
        for name in ("run_id", "client", "user", "host", "runner", "env"):
            value = getattr(self, name)
            if not isinstance(value, str) or (name in ("run_id", "client") and not value):
                raise TypeError(f"a run's seat needs {name} as a string, got {value!r}")
        for name in ("total", "done", "failed", "chunks_out"):
            check_count(name, getattr(self, name))
        if self.max_slots is not None:
            check_count("max_slots", self.max_slots, least=1)
        check_error(self.first_error)
        if not isinstance(self.owner, str) or not (
            self.owner == "" or DIGEST.fullmatch(self.owner)
        ):
            raise TypeError(f"a run's seat needs owner as a key's digest, got {self.owner!r}")

    def as_dict(self) -> dict[str, Any]:
        """Return the seat as plain data (what crosses the wire to a client), less its owner key."""
        said = asdict(self)
        del said["owner"]
        return said


@dataclass
class RunBook:
    """The seats of the runs on one cluster.

    Examples
    --------
    >>> book = RunBook()
    >>> book.join(Seat("r1", "c1", "alice", "lab", "Decode", "env", total=100), threads=8, now=0.0)
    8
    >>> book.join(Seat("r2", "c2", "bob", "lab", "Decode", "env", total=16), threads=8, now=1.0)
    8
    >>> book.report("r1", done=50, failed=0, chunks_out=8, threads=8, now=1.1).share
    1
    >>> book.cancel("r2", by="teacher").user
    'bob'
    >>> book.report("r2", done=3, failed=0, chunks_out=2, threads=8, now=3.0).cancel_by
    'teacher'
    >>> book.leave("r2", threads=8)
    >>> book.share_of("r1", threads=8, now=4.0)
    8
    >>> [seat["share"] for seat in book.listing(threads=4, now=5.0)]  # four threads left
    [4]
    """

    seats: dict[str, Seat] = field(default_factory=dict)
    #: Runs seated now by each client (bounded by :data:`SEATS_PER_CLIENT`).
    per_client: dict[str, int] = field(default_factory=dict)
    #: The threads' split among attendees, then among each one's runs, worked out lazily.
    shares: Shares = field(default_factory=Shares)

    def join(self, seat: Seat, *, threads: int, now: float) -> int:
        """Give ``seat`` a place; return its share of ``threads``.

        Raises
        ------
        ValueError
            When the seat's client has :data:`SEATS_PER_CLIENT` runs seated already
            (nothing is stored).
        """
        held = self.per_client.get(seat.client, 0)
        if seat.run_id not in self.seats and held >= SEATS_PER_CLIENT:
            raise ValueError(
                f"client {seat.client} has {held} runs on this cluster already, the most one "
                "client may seat at once; wait for one to end"
            )
        if seat.run_id in self.seats:  # seated again (a scheduler's ledger met anew)
            self.leave(seat.run_id, threads=threads)
        seat.started = seat.seen = now
        self.seats[seat.run_id] = seat
        self.per_client[seat.client] = self.per_client.get(seat.client, 0) + 1
        self.shares.add(seat.user, seat.run_id, seat.max_slots, _left(seat))
        return self._share_of(seat, threads, now)

    def report(
        self,
        run_id: str,
        *,
        done: int,
        failed: int,
        chunks_out: int,
        threads: int,
        now: float,
        first_error: str = "",
    ) -> Seat | None:
        """Take a run's progress; return its seat with its share now (None if it has none)."""
        for name, value in (("done", done), ("failed", failed), ("chunks_out", chunks_out)):
            check_count(name, value)
        check_error(first_error)
        seat = self.seats.get(run_id)
        if seat is None:
            return None
        seat.done, seat.failed, seat.chunks_out, seat.seen = done, failed, chunks_out, now
        seat.first_error = first_error or seat.first_error
        self.shares.progress(seat.user, run_id, _left(seat))
        self._share_of(seat, threads, now)
        return seat

    def leave(self, run_id: str, *, threads: int) -> None:
        """Take the run's seat away (it ended); the others share its slots."""
        seat = self.seats.pop(run_id, None)
        if seat is not None:
            left = self.per_client.pop(seat.client, 1) - 1
            if left:
                self.per_client[seat.client] = left
            self.shares.remove(seat.user, run_id)

    def drop_client(self, client: str, *, threads: int) -> list[str]:
        """Take away the seats of ``client``'s runs (it went away); return their ids."""
        gone = [run_id for run_id, seat in self.seats.items() if seat.client == client]
        for run_id in gone:
            self.shares.remove(self.seats.pop(run_id).user, run_id)
        self.per_client.pop(client, None)
        return gone

    def listing(self, threads: int, now: float) -> list[dict[str, Any]]:
        """Return every seat as plain data, its share of ``threads`` as of now.

        A seat's share was last worked out when some run reported; workers
        that joined or left since change it, so a listing shares out anew
        rather than show a share for a thread count it no longer has.
        """
        for seat in self.seats.values():
            self._share_of(seat, threads, now)
        return [seat.as_dict() for seat in self.seats.values()]

    def find(self, run_id: str) -> Seat:
        """Return the seat whose id is ``run_id`` or starts with it (one only).

        Raises
        ------
        KeyError
            Saying which runs there are, when none or several match.
        """
        matches = [seat for rid, seat in self.seats.items() if rid.startswith(run_id)]
        if len(matches) == 1:
            return matches[0]
        listed = ", ".join(sorted(self.seats)) or "none"
        if not matches:
            raise KeyError(f"no run {run_id!r} on this cluster (runs now: {listed})")
        raise KeyError(f"{run_id!r} names {len(matches)} runs ({listed}): give more of the id")

    def cancel(self, run_id: str, *, by: str) -> Seat:
        """Ask the run ``run_id`` (or the one its id starts with) to stop; return its seat."""
        seat = self.find(run_id)
        seat.cancel_by = by
        return seat

    def share_of(self, run_id: str, threads: int, now: float) -> int:
        """Return run ``run_id``'s share of ``threads`` at ``now`` (its next report is told it)."""
        return self._share_of(self.seats[run_id], threads, now)

    def _share_of(self, seat: Seat, threads: int, now: float) -> int:
        # Each attendee (a seat's user) first, then each of their runs: one attendee's many
        # runs take one attendee's share. Only what changed is worked out again.
        for run_id, share in self.shares.of(seat.user, threads, now).items():
            self.seats[run_id].share = share
        return seat.share


def _left(seat: Seat) -> int:
    """Return the items ``seat``'s run has still to do."""
    return max(0, seat.total - seat.done)
