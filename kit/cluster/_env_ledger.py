"""Who holds which env, and which env goes next: the decisions, no I/O.

One :class:`EnvLedger` decides for every client of a cluster (it lives in
the scheduler, see :mod:`kit.cluster._shared`), and for one process inline.
A run holds its env for as long as it runs; an env held by any run is never
torn down; past ``max_envs`` envs of one provider class, the least recently
used idle one goes, whoever used it; an env nobody has held for its idle
timeout goes too. The ledger only decides: the caller tears down what it
returns and says :meth:`EnvLedger.gone` once that is done.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class EnvLedger:
    """The holds on envs, their last use and the envs being torn down.

    Examples
    --------
    Two envs of one provider class are kept (``max_envs=2``); a third one
    makes the least recently used idle one go, and a held one never goes:

    >>> ledger = EnvLedger()
    >>> ledger.hold("P:a", "run-1", "alice", 0.0, present=[], max_envs=2)
    []
    >>> ledger.hold("P:b", "run-2", "bob", 1.0, present=["P:a"], max_envs=2)
    []
    >>> ledger.release("run-2", 2.0)
    'P:b'
    >>> ledger.hold("P:c", "run-3", "bob", 3.0, present=["P:a", "P:b"], max_envs=2)
    ['P:b']
    >>> sorted(ledger.leaving)
    ['P:b']
    >>> ledger.gone(["P:b"]); ledger.holders("P:a")
    ['alice']

    A client that goes away lets go of everything it held:

    >>> ledger.drop_client("alice", 4.0)
    ['P:a']
    """

    #: Env name -> {hold id -> client holding it}.
    holds: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Env name -> when it was last held or let go (the least recent goes first).
    used: dict[str, float] = field(default_factory=dict)
    #: Env name -> seconds it may stay idle before it goes (absent: kept).
    idle_after: dict[str, float] = field(default_factory=dict)
    #: Envs claimed for teardown and not yet said gone: nobody may hold them meanwhile.
    leaving: set[str] = field(default_factory=set)

    def hold(
        self,
        name: str,
        hold: str,
        client: str,
        now: float,
        *,
        present: Iterable[str],
        max_envs: int,
        idle_timeout: float | None = None,
    ) -> list[str]:
        """Hold env ``name`` for ``client`` under the id ``hold``; return the envs to tear down.

        ``present`` names the envs kept now (of any provider class); those of
        ``name``'s class beyond ``max_envs`` (``name`` counted), least
        recently used and held by nobody, are returned and claimed as
        leaving. An env held by a run stays, over the bound if need be.

        Raises
        ------
        ValueError
            When ``name`` is leaving: wait until it is :meth:`gone`, then hold it.
        """
        if name in self.leaving:
            raise ValueError(f"the env {name!r} is being torn down; hold it once it is gone")
        self.holds.setdefault(name, {})[hold] = client
        self.used[name] = now
        if idle_timeout is None:
            self.idle_after.pop(name, None)
        else:
            self.idle_after[name] = idle_timeout
        prefix = name.rsplit(":", 1)[0] + ":"
        others = sorted(
            (
                n
                for n in set(present)
                if n.startswith(prefix) and n != name and n not in self.leaving
            ),
            key=lambda n: self.used.get(n, float("-inf")),
        )
        excess = len(others) - (max_envs - 1)
        stale = [n for n in others if not self.holds.get(n)][: max(0, excess)]
        self.leaving.update(stale)
        return stale

    def release(self, hold: str, now: float) -> str | None:
        """Let go of the hold ``hold``; return the name of the env it held (None if unknown)."""
        for name, holders in self.holds.items():
            if holders.pop(hold, None) is not None:
                if not holders:
                    del self.holds[name]
                self.used[name] = now
                return name
        return None

    def claim(self, name: str) -> bool:
        """Claim env ``name`` for teardown if nobody holds it; whether it was claimed."""
        if self.holds.get(name) or name in self.leaving:
            return False
        self.leaving.add(name)
        return True

    def holders(self, name: str) -> list[str]:
        """Return the clients holding env ``name`` now, one entry per hold."""
        return sorted(self.holds.get(name, {}).values())

    def drop_client(self, client: str, now: float) -> list[str]:
        """Let go of every hold of ``client`` (it went away); return the envs it held."""
        mine = [
            hold for holders in self.holds.values() for hold, c in holders.items() if c == client
        ]
        return sorted({name for hold in mine if (name := self.release(hold, now)) is not None})

    def expired(self, now: float, present: Iterable[str]) -> list[str]:
        """Claim and return the envs of ``present`` idle for longer than their timeout."""
        stale = [
            name
            for name in sorted(set(present))
            if name in self.idle_after
            and not self.holds.get(name)
            and name not in self.leaving
            and now - self.used.get(name, now) >= self.idle_after[name]
        ]
        self.leaving.update(stale)
        return stale

    def gone(self, names: Iterable[str]) -> None:
        """Say the envs ``names`` were torn down (or that claiming them is given up)."""
        for name in names:
            self.leaving.discard(name)
            if not self.holds.get(name):
                self.used.pop(name, None)
                self.idle_after.pop(name, None)
