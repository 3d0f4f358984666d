"""What env workers, collectors and evaluators hand back: states, transitions, episodes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple


class EnvStatus(StrEnum):
    """What one env's answer is: a reset, a step, or a fault that broke its episode.

    A ``str`` enum (``status == "timeout"`` holds). Between processes it
    travels as its plain value (see :mod:`kit.rl._protocol`): pickling an
    enum member costs several times a whole CartPole step.

    Examples
    --------
    >>> EnvStatus("timeout").fault, EnvStatus.STEPPED.fault
    (True, False)
    """

    #: The answer to a reset: the episode's first observation.
    RESET = "reset"
    #: The answer to a step.
    STEPPED = "ok"
    #: The env raised, or its process died; the slot's env was rebuilt.
    ENV_ERROR = "env_error"
    #: The env did not answer in time; the slot's env was rebuilt.
    TIMEOUT = "timeout"

    @property
    def fault(self) -> bool:
        """Whether the env failed and the slot's episode is broken."""
        return self in FAULTS


#: The statuses as module names, for the loops that compare them on every step:
#: looking a member up on its class (``EnvStatus.RESET``) costs 5x the comparison.
RESET, STEPPED, ENV_ERROR, TIMEOUT = (
    EnvStatus.RESET,
    EnvStatus.STEPPED,
    EnvStatus.ENV_ERROR,
    EnvStatus.TIMEOUT,
)
#: Faults: the slot's env was rebuilt and its episode is broken.
FAULTS = frozenset({ENV_ERROR, TIMEOUT})


class EpisodeStatus(StrEnum):
    """How an episode stands: going, ended by the task or a time limit, or broken by a fault.

    Examples
    --------
    >>> EpisodeStatus.ended_by(EnvStatus.TIMEOUT), EpisodeStatus.TRUNCATED.ok
    (<EpisodeStatus.TIMEOUT: 'timeout'>, True)
    """

    #: Not ended yet.
    RUNNING = "running"
    #: The task ended (a terminal state).
    TERMINATED = "terminated"
    #: A time limit cut it.
    TRUNCATED = "truncated"
    #: The env raised or its process died mid-episode.
    ENV_ERROR = "env_error"
    #: The env hung mid-episode.
    TIMEOUT = "timeout"

    @property
    def ok(self) -> bool:
        """Whether the episode ended normally (terminated or truncated)."""
        return self in NORMAL_ENDS

    @classmethod
    def ended_by(cls, fault: EnvStatus) -> EpisodeStatus:
        """Return the status of an episode an env fault (``env_error``, ``timeout``) broke."""
        if not fault.fault:
            raise ValueError(f"{fault.value!r} is not a fault: an episode ends with one")
        return cls(fault.value)


class EnvState(NamedTuple):
    """One answer from an env worker: the result of a reset or a step, or a fault.

    Terminated (the task ended: a terminal state) and truncated (cut by a
    time limit) are kept apart, as in gymnasium, and ``obs`` after the last
    step of an episode is always its true final observation (nothing is
    reset behind the caller's back). A named tuple: cheap to build and to
    send between processes, millions of times.

    Examples
    --------
    >>> EnvState(obs=[0.0], reward=1.0, terminated=True).done
    True
    >>> EnvState(obs=None, status=EnvStatus.TIMEOUT, error="no answer in 1 s").fault
    True
    """

    obs: Any
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] | None = None
    status: EnvStatus = STEPPED
    error: str | None = None

    @property
    def fault(self) -> bool:
        """True when the env failed (an exception, a crash, a hang): the episode is broken."""
        return self.status in FAULTS

    @property
    def done(self) -> bool:
        """True when the episode ended: terminated, truncated or broken by a fault."""
        return self.terminated or self.truncated or self.status in FAULTS


#: How an episode ends normally. A set of members, so a plain ``"terminated"`` is in it too.
NORMAL_ENDS = frozenset({EpisodeStatus.TERMINATED, EpisodeStatus.TRUNCATED})


@dataclass(frozen=True)
class Transition:
    """One env step with where it came from.

    ``episode_id`` and ``step`` identify it; ``env_index`` (the env in the pool;
    DI-engine's ``env_id`` reads the same),
    ``worker`` (the Dask worker, or ``"driver"``), ``policy_version`` (of the
    weights that chose ``action``) and ``seed`` (the episode's env seed) say
    how it was made.

    Examples
    --------
    >>> t = Transition([0.0], 1, 1.0, [0.1], False, True, episode_id=4, step=9, env_index=0,
    ...                worker="driver", policy_version=2, seed=123)
    >>> t.done, t.episode_id, t.policy_version
    (True, 4, 2)
    """

    obs: Any
    action: Any
    reward: float
    next_obs: Any
    terminated: bool
    truncated: bool
    episode_id: int
    step: int
    env_index: int
    worker: str
    policy_version: int
    seed: int
    info: dict[str, Any] = field(default_factory=dict)
    #: In a two-player env: the agent that acted, and the name of its policy.
    agent: str | None = None
    policy: str | None = None

    @property
    def env_id(self) -> int:
        """DI-engine's name for :attr:`env_index`."""
        return self.env_index

    @property
    def done(self) -> bool:
        """True on an episode's last step (terminated or truncated)."""
        return self.terminated or self.truncated


@dataclass
class Episode:
    """A whole episode: its transitions and how it ended.

    ``status`` (an :class:`EpisodeStatus`) is ``terminated``, ``truncated``,
    ``env_error`` or ``timeout`` (the env failed mid-episode; ``error`` says how).

    Examples
    --------
    >>> ep = Episode(3, seed=11, env_index=0, worker="driver", status=EpisodeStatus.TERMINATED)
    >>> ep.ok, ep.length, ep.return_
    (True, 0, 0.0)
    """

    episode_id: int
    seed: int
    env_index: int
    worker: str
    status: EpisodeStatus = EpisodeStatus.RUNNING
    transitions: list[Transition] = field(default_factory=list)
    error: str | None = None

    @property
    def env_id(self) -> int:
        """DI-engine's name for :attr:`env_index`."""
        return self.env_index

    @property
    def ok(self) -> bool:
        """True when the episode ended normally (terminated or truncated)."""
        return self.status in NORMAL_ENDS

    @property
    def length(self) -> int:
        """Number of steps."""
        return len(self.transitions)

    @property
    def return_(self) -> float:
        """Sum of rewards."""
        return float(sum(t.reward for t in self.transitions))

    def returns(self, by: str = "agent") -> dict[str, float]:
        """Sum of rewards per agent (``by="agent"``) or per policy name (``by="policy"``).

        For episodes of a two-player env (see :class:`kit.rl.battle.BattleCollector`).
        """
        if by not in ("agent", "policy"):
            raise ValueError(f"by must be 'agent' or 'policy', got {by!r}")
        out: dict[str, float] = {}
        for t in self.transitions:
            key = str(getattr(t, by))
            out[key] = out.get(key, 0.0) + t.reward
        return out

    @property
    def policy_versions(self) -> list[int]:
        """The distinct policy versions that chose this episode's actions, in order."""
        seen: list[int] = []
        for t in self.transitions:
            if not seen or seen[-1] != t.policy_version:
                seen.append(t.policy_version)
        return seen
