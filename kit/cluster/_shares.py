"""How a cluster's worker threads are split among the runs on it: attendees first.

:func:`fair_shares` splits slots among runs (equal, capped, water filling);
:func:`shares_by_owner` splits among owners first, then among each owner's
runs; :class:`Shares` keeps that split for a run book, working out again only
what a change touches, so seating a run or taking its report does not
re-share every seat on the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Runs one client may have seated at once on a cluster (a sweep's trials at once, say).
SEATS_PER_CLIENT = 64


def fair_shares(threads: int, caps: dict[str, int | None]) -> dict[str, int]:
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


def shares_by_owner(
    threads: int, caps: dict[str, int | None], owners: dict[str, str]
) -> dict[str, int]:
    """Split ``threads`` among owners first, then among each owner's runs.

    An owner (an attendee) with many runs gets one owner's share, not one
    per run; an owner whose runs are all capped takes at most their sum.

    Examples
    --------
    One attendee's three runs and another's one: half each, then a third of
    the first half each.

    >>> owners = {"a1": "alice", "a2": "alice", "a3": "alice", "b1": "bob"}
    >>> shares_by_owner(12, dict.fromkeys(owners), owners)
    {'a1': 2, 'a2': 2, 'a3': 2, 'b1': 6}
    >>> shares_by_owner(12, {"a1": 1, "a2": 1, "a3": None, "b1": None}, owners)["b1"]
    6
    """
    runs_of: dict[str, dict[str, int | None]] = {}
    for run, owner in owners.items():
        runs_of.setdefault(owner, {})[run] = caps[run]
    owner_caps = {owner: _limit(runs) for owner, runs in runs_of.items()}
    shares: dict[str, int] = {}
    for owner, share in fair_shares(threads, owner_caps).items():
        shares.update(fair_shares(share, runs_of[owner]))
    return {run: shares[run] for run in sorted(caps)}


@dataclass
class Shares:
    """The split of a cluster's threads, kept up to date lazily, by owner.

    Examples
    --------
    >>> shares = Shares()
    >>> shares.add("alice", "a1", None)
    >>> shares.add("bob", "b1", None)
    >>> shares.of("alice", threads=8)
    {'a1': 4}
    >>> shares.of("alice", threads=8)  # nothing changed: nothing to say
    {}
    >>> shares.add("alice", "a2", None)
    >>> shares.of("alice", threads=8), shares.of("bob", threads=8)
    ({'a1': 2, 'a2': 2}, {'b1': 4})
    """

    #: Owner -> their runs' caps.
    runs: dict[str, dict[str, int | None]] = field(default_factory=dict)
    #: Owner -> their share of the threads, for :attr:`threads` (None: to work out).
    owner_share: dict[str, int] | None = None
    threads: int = 0
    #: Owner -> the owner share their runs' split was last worked out for.
    split_for: dict[str, int] = field(default_factory=dict)

    def add(self, owner: str, run: str, cap: int | None) -> None:
        """Seat ``owner``'s run ``run`` (capped at ``cap`` slots, or not)."""
        before = self._cap(owner)
        self.runs.setdefault(owner, {})[run] = cap
        self._changed(owner, before)

    def remove(self, owner: str, run: str) -> None:
        """Take ``owner``'s run ``run`` away."""
        before = self._cap(owner)
        runs = self.runs.get(owner, {})
        runs.pop(run, None)
        if not runs:
            self.runs.pop(owner, None)
        self._changed(owner, before)

    def of(self, owner: str, threads: int) -> dict[str, int]:
        """Return the shares of ``owner``'s runs if they changed since last asked, else {}."""
        if self.owner_share is None or threads != self.threads:
            caps = {name: _limit(runs) for name, runs in self.runs.items()}
            self.owner_share, self.threads = fair_shares(threads, caps), threads
        share = self.owner_share.get(owner)
        if share is None or self.split_for.get(owner) == share:
            return {}
        self.split_for[owner] = share
        return fair_shares(share, self.runs[owner])

    def _cap(self, owner: str) -> int | str | None:
        runs = self.runs.get(owner)
        if not runs:
            return "absent"
        limits = list(runs.values())
        return None if None in limits else sum(c or 0 for c in limits)

    def _changed(self, owner: str, before: int | str | None) -> None:
        self.split_for.pop(owner, None)  # the owner's own runs changed: their split did
        if self._cap(owner) != before:  # who shares, or how much one may take, changed
            self.owner_share = None


def _limit(runs: dict[str, int | None]) -> int | None:
    """Return what an owner's runs may take at most: None if one of them is uncapped."""
    limits = list(runs.values())
    return None if None in limits else sum(c or 0 for c in limits)
