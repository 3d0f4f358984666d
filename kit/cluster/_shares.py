"""How a cluster's worker threads are split among the runs on it: attendees first.

:func:`fair_shares` splits slots among runs (equal, capped, water filling);
:func:`burst_shares` splits them among attendees so, except that the one
whose work left is clearly the least may take all the slots it can use while
it has burst left (:mod:`kit.cluster._bursts`); :func:`shares_by_owner`
splits among owners so, then among each owner's runs; :class:`Shares` keeps
that split for a run book, working out again only what a change touches, so
seating a run or taking its report does not re-share every seat on the
cluster.

Why the least work left first: the cluster does the same work whichever run
it serves, so a 3,200-item run ends when it would have anyway, while a
16-item check started late is done in about its time alone rather than twice
that on an equal half of the slots (the shortest work first, the classic way
to keep waits short). The burst bounds it: nobody stops for long, however
many short runs come.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kit.cluster._bursts import Bursts

#: Runs one client may have seated at once on a cluster (a sweep's trials at once, say).
SEATS_PER_CLIENT = 64


def fair_shares(threads: int, caps: Mapping[str, int | None]) -> dict[str, int]:
    """Split ``threads`` slots among runs: equal, each at most its cap, at least 1.

    What a capped run leaves is shared by the others (water filling); a run
    alone on the cluster gets all of it.

    Examples
    --------
    >>> fair_shares(8, {"a": None})
    {'a': 8}
    >>> fair_shares(8, {"a": None, "b": None})
    {'a': 4, 'b': 4}
    >>> fair_shares(8, {"a": None, "b": 2, "c": None})
    {'a': 3, 'b': 2, 'c': 3}
    >>> fair_shares(2, {"a": None, "b": None, "c": None})
    {'a': 1, 'b': 1, 'c': 1}
    """
    shares: dict[str, int] = {}
    left, open_runs = threads, sorted(caps)
    # Capped runs below an equal split take their cap; the rest split what remains.
    while open_runs:
        equal = left // len(open_runs)
        capped = [run for run in open_runs if (cap := caps[run]) is not None and cap <= equal]
        if not capped:
            extra = left - equal * len(open_runs)
            for i, run in enumerate(open_runs):
                shares[run] = max(1, equal + (1 if i < extra else 0))
            break
        for run in capped:
            shares[run] = max(1, caps[run] or 1)
            left -= shares[run]
            open_runs.remove(run)
    return {run: shares[run] for run in sorted(caps)}


def burst_shares(
    threads: int,
    caps: dict[str, int | None],
    left: dict[str, int],
    may_burst: Callable[[str], bool],
) -> tuple[dict[str, int], str | None, int]:
    """Split ``threads`` among owners; return the split, who bursts (or None) and by how much.

    As :func:`fair_shares`, each owner capped also at its items ``left``
    (more slots than items would stay idle), except: the owner with strictly
    the least left, if it ``may_burst`` (it has burst left), takes all
    the slots it can use, the others sharing the rest (one slot each at
    least). The last value is the slots it takes beyond its fair share. With
    as many owners as threads or more, or a tie for the least, nobody bursts.

    Examples
    --------
    A 3,200-item run has the cluster; a 16-item run joins: it takes it all
    while it has burst left, else half; a 3-item run takes 3.

    >>> runs, left = {"big": None, "late": None}, {"big": 3000, "late": 16}
    >>> burst_shares(8, runs, left, may_burst=lambda owner: True)
    ({'big': 1, 'late': 8}, 'late', 4)
    >>> burst_shares(8, runs, left, may_burst=lambda owner: owner == "big")
    ({'big': 4, 'late': 4}, None, 0)
    >>> burst_shares(8, runs, {"big": 3000, "late": 3}, may_burst=lambda owner: True)
    ({'big': 5, 'late': 3}, None, 0)
    """
    usable = {
        owner: min(threads, threads if cap is None else cap, max(1, left[owner]))
        for owner, cap in caps.items()
    }
    fair = fair_shares(threads, usable)
    if len(fair) < 2 or len(fair) >= threads:
        return fair, None, 0
    first, second = heapq.nsmallest(2, fair, key=lambda owner: (left[owner], owner))
    if left[first] == left[second] or usable[first] <= fair[first] or not may_burst(first):
        return fair, None, 0
    shares = fair_shares(threads - usable[first], {o: usable[o] for o in fair if o != first})
    shares[first] = usable[first]
    return {owner: shares[owner] for owner in sorted(shares)}, first, usable[first] - fair[first]


def split_runs(share: int, caps: dict[str, int | None], left: Mapping[str, int]) -> dict[str, int]:
    """Split one owner's ``share`` among its runs: its run with clearly the least left first.

    Within one attendee's share there is nobody else to be fair to: its
    shortest run takes all it can use (:func:`burst_shares` with no bound),
    so a check started beside one's own long run is done as fast as alone.

    Examples
    --------
    >>> split_runs(8, {"long": None, "check": None}, {"long": 3000, "check": 16})
    {'check': 8, 'long': 1}
    >>> split_runs(8, {"a": None, "b": None}, {"a": 40, "b": 40})
    {'a': 4, 'b': 4}
    """
    own = {run: left[run] for run in caps}
    return burst_shares(share, caps, own, lambda run: True)[0]


def shares_by_owner(
    threads: int,
    caps: dict[str, int | None],
    owners: dict[str, str],
    left: dict[str, int],
    bursting: set[str],
) -> dict[str, int]:
    """Split ``threads`` among owners (:func:`burst_shares`), then among runs (:func:`split_runs`).

    An owner (an attendee) with many runs gets one owner's share, not one
    per run; an owner whose runs are all capped takes at most their sum;
    ``left`` is each run's items left, ``bursting`` the owners with burst left.

    Examples
    --------
    One attendee's three runs and another's one, as much left each: half
    each, then a third of the first half each.

    >>> owners = {"a1": "alice", "a2": "alice", "a3": "alice", "b1": "bob"}
    >>> left = {"a1": 100, "a2": 100, "a3": 100, "b1": 300}
    >>> shares_by_owner(12, dict.fromkeys(owners), owners, left, {"alice", "bob"})
    {'a1': 2, 'a2': 2, 'a3': 2, 'b1': 6}
    >>> shares_by_owner(12, {"a1": 1, "a2": 1, "a3": None, "b1": None}, owners, left, set())["b1"]
    6
    """
    runs_of: dict[str, dict[str, int | None]] = {}
    owner_left: dict[str, int] = {}
    for run, owner in owners.items():
        runs_of.setdefault(owner, {})[run] = caps[run]
        owner_left[owner] = owner_left.get(owner, 0) + left[run]
    owner_caps = {owner: _limit(runs) for owner, runs in runs_of.items()}
    shares: dict[str, int] = {}
    split, _, _ = burst_shares(threads, owner_caps, owner_left, bursting.__contains__)
    for owner, share in split.items():
        shares.update(split_runs(share, runs_of[owner], left))
    return {run: shares[run] for run in sorted(caps)}


@dataclass
class Shares:
    """The split of a cluster's threads, kept up to date lazily, by owner.

    The split among owners is worked out again when an owner comes, goes, or
    may take more or less (a cap); while there are fewer owners than threads
    (only then may one burst) at any seat coming or going; and when a
    burst is spent. Its cost is then one entry an owner, never one a seat.
    Reports of items left (:meth:`progress`) count from the next such change.

    Examples
    --------
    >>> shares = Shares()
    >>> shares.add("alice", "a1", None, left=3000)
    >>> shares.of("alice", threads=8, now=0.0)
    {'a1': 8}
    >>> shares.of("alice", threads=8, now=0.0)  # nothing changed: nothing to say
    {}
    >>> shares.add("bob", "b1", None, left=16)  # Bob's 16-item check: the least left, it bursts
    >>> shares.of("alice", threads=8, now=1.0), shares.of("bob", threads=8, now=1.0)
    ({'a1': 1}, {'b1': 8})
    >>> shares.of("alice", threads=8, now=4.0)  # a burst of 1 s of the cluster spent: half each
    {'a1': 4}
    """

    #: Owner -> their runs' caps.
    runs: dict[str, dict[str, int | None]] = field(default_factory=dict)
    #: Run -> its items left as last said.
    left: dict[str, int] = field(default_factory=dict)
    #: Owner -> the items left of all their runs.
    owner_left: dict[str, int] = field(default_factory=dict)
    #: Owner -> what their runs may take at most (None: one of them is uncapped).
    owner_cap: dict[str, int | None] = field(default_factory=dict)
    #: Owner -> their share of the threads, for :attr:`threads` (None: to work out).
    owner_share: dict[str, int] | None = None
    threads: int = 0
    #: Owner -> the owner share their runs' split was last worked out for.
    split_for: dict[str, int] = field(default_factory=dict)
    #: What each owner has left of its burst, and who bursts now.
    bursts: Bursts = field(default_factory=Bursts)
    #: When the burst going on now is spent (then the split is worked out again).
    burst_ends: float = math.inf

    def add(self, owner: str, run: str, cap: int | None, left: int) -> None:
        """Seat ``owner``'s run ``run`` (capped at ``cap`` slots, or not; ``left`` items to do)."""
        before = self._cap(owner)
        self.runs.setdefault(owner, {})[run] = cap
        self.progress(owner, run, left)
        self._changed(owner, before)

    def remove(self, owner: str, run: str) -> None:
        """Take ``owner``'s run ``run`` away."""
        before = self._cap(owner)
        self.progress(owner, run, 0)
        del self.left[run]
        runs = self.runs.get(owner, {})
        runs.pop(run, None)
        if not runs:
            self.runs.pop(owner, None)
            self.owner_left.pop(owner, None)
        self._changed(owner, before)

    def progress(self, owner: str, run: str, left: int) -> None:
        """Take the items ``owner``'s run ``run`` has left (counted at the next re-share)."""
        was = self.left.get(run, 0)
        self.left[run] = left
        self.owner_left[owner] = self.owner_left.get(owner, 0) + left - was

    def of(self, owner: str, threads: int, now: float) -> dict[str, int]:
        """Return the shares of ``owner``'s runs if they changed since last asked, else {}."""
        if self.owner_share is None or threads != self.threads or now >= self.burst_ends:
            self._share_out(threads, now)
        assert self.owner_share is not None
        share = self.owner_share.get(owner)
        if share is None or self.split_for.get(owner) == share:
            return {}
        self.split_for[owner] = share
        return split_runs(share, self.runs[owner], self.left)

    def _share_out(self, threads: int, now: float) -> None:
        self.owner_share, burster, extra = burst_shares(
            threads,
            self.owner_cap,
            self.owner_left,
            lambda owner: self.bursts.may_burst(owner, now),
        )
        self.threads = threads
        self.bursts.start(burster, extra / threads if threads else 0.0, now)
        self.burst_ends = self.bursts.ends_at(now)

    def _cap(self, owner: str) -> int | str | None:
        return self.owner_cap.get(owner, "absent")

    def _changed(self, owner: str, before: int | str | None) -> None:
        self.split_for.pop(owner, None)  # the owner's own runs changed: their split did
        runs = self.runs.get(owner)
        if runs:
            self.owner_cap[owner] = _limit(runs)
        else:
            self.owner_cap.pop(owner, None)
        cap = self._cap(owner)
        # Who shares, or how much one may take, changed; or work left may decide the split.
        if cap != before or len(self.runs) < self.threads:
            self.owner_share = None


def _limit(runs: dict[str, int | None]) -> int | None:
    """Return what an owner's runs may take at most: None if one of them is uncapped."""
    limits = list(runs.values())
    return None if None in limits else sum(c or 0 for c in limits)
