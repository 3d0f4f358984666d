"""How much of its burst each attendee has left: a short run may take the whole cluster.

An attendee whose run has clearly the least work left on the cluster may take
every slot it can use, beyond its fair share (see
:func:`kit.cluster._shares.burst_shares`), for at most :data:`BURST_SECONDS`
of the whole cluster at once; a spent burst comes back over
:data:`REFILL_SECONDS`. So a 16-item check started while a 3,200-item run
holds the cluster is done in about its time alone, the large run ends when it
would have anyway (the cluster does the same work), and no attendee takes
more than a tenth of the cluster beyond its fair share on average, however
many short runs it starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: Seconds of the whole cluster an attendee may take at once beyond its fair share.
BURST_SECONDS = 1.0
#: Seconds a spent burst takes to come back in full.
REFILL_SECONDS = 10.0
#: A burst starts only with at least this much of it back: else one just spent would start
#: again at each re-share, a sliver at a time.
START_SECONDS = 0.5


@dataclass
class Bursts:
    """Each attendee's burst left, in seconds of the whole cluster; one attendee bursts at a time.

    Examples
    --------
    Bob's run takes half the cluster beyond his fair share from t=0: his
    second of the whole cluster lasts about two seconds (less what comes back).

    >>> bursts = Bursts()
    >>> bursts.left("bob", now=0.0)
    1.0
    >>> bursts.start("bob", extra=0.5, now=0.0)
    >>> round(bursts.left("bob", now=1.0), 2)
    0.6
    >>> round(bursts.ends_at(now=1.0), 2)
    2.5
    >>> bursts.start(None, extra=0.0, now=1.0)  # his run ended: it comes back
    >>> round(bursts.left("bob", now=2.0), 2), bursts.may_burst("bob", now=2.0)
    (0.7, True)
    """

    #: Owner -> (burst left, when), for the attendees that burst lately (full ones are dropped).
    kept: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: The attendee bursting now, if one is.
    burster: str | None = None
    #: The fraction of the cluster it takes beyond its fair share.
    extra: float = 0.0

    def left(self, owner: str, now: float) -> float:
        """Return the seconds of the whole cluster ``owner`` may still take beyond its share."""
        seconds, at = self.kept.get(owner, (BURST_SECONDS, now))
        rate = BURST_SECONDS / REFILL_SECONDS - (self.extra if owner == self.burster else 0.0)
        return min(BURST_SECONDS, max(0.0, seconds + (now - at) * rate))

    def may_burst(self, owner: str, now: float) -> bool:
        """Whether ``owner`` may burst now: it goes on bursting, or has half its burst back."""
        left = self.left(owner, now)
        return left >= START_SECONDS or (owner == self.burster and left > 0)

    def start(self, owner: str | None, extra: float, now: float) -> None:
        """Let ``owner`` burst from ``now``, taking ``extra`` of the cluster (None: nobody)."""
        if owner == self.burster and extra == self.extra:
            return
        if self.burster is not None:  # what it spent until now is settled
            self.kept[self.burster] = (self.left(self.burster, now), now)
        if owner is not None:  # it spends from now on
            self.kept[owner] = (self.left(owner, now), now)
        self.burster, self.extra = owner, extra if owner is not None else 0.0
        # Those whose burst came back in full need no entry: a forged crowd leaves none.
        self.kept = {
            name: kept
            for name, kept in self.kept.items()
            if name == owner or self.left(name, now) < BURST_SECONDS
        }

    def ends_at(self, now: float) -> float:
        """Return when the attendee bursting now has spent its burst (inf: never, or none)."""
        if self.burster is None:
            return math.inf
        rate = self.extra - BURST_SECONDS / REFILL_SECONDS
        if rate <= 0:
            return math.inf
        return now + self.left(self.burster, now) / rate
