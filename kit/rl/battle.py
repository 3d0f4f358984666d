"""Two-player collection: a battle collector and evaluator for PettingZoo parallel envs.

Kit speaks PettingZoo's parallel API (``possible_agents``, ``agents``,
``reset(seed=, options=) -> (observations, infos)`` and ``step(actions) ->
(observations, rewards, terminations, truncations, infos)``, every value a
dict keyed by agent), the ecosystem's standard for simultaneous-move games,
without importing PettingZoo. :class:`JointEnv` makes such an env one env of
any Kit pool (its action is the dict of every agent's action), so battles run
in this process, in env processes, over shared memory or on Dask workers.

A *lineup* maps each agent to a policy. Every transition records the agent,
the name of the policy that acted (its ``name`` attribute, else the agent)
and that policy's version. :class:`FrozenPolicy` fixes a copy of a policy at
a version: the opponent in self-play. DI-engine's battle collectors and
evaluator are the model; their "policy 0 against policy 1" is a lineup of
two entries, with ``swap=True`` for playing both sides.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kit.rl._seeding import EVAL, TRAIN
from kit.rl._types import EnvState, Episode, Transition
from kit.rl.collect import EnvLoop, EnvUser, Policy, _Slot
from kit.rl.pool import WorkerPool

__all__ = [
    "BattleCollector",
    "BattleEvaluator",
    "BattleResult",
    "FrozenPolicy",
    "JointEnv",
    "Lineup",
    "RockPaperScissors",
    "joint_env",
]


class RockPaperScissors:
    """Repeated rock-paper-scissors for two players: a small two-player env for tests and teaching.

    Each round both players choose 0 (rock), 1 (paper) or 2 (scissors); the
    winner gets +1 and the loser -1. A player observes the opponent's
    previous choice (3 before the first round). Episodes are truncated after
    ``max_cycles`` rounds. PettingZoo's parallel API (checked by its
    ``parallel_api_test`` in Kit's tests).

    Examples
    --------
    >>> env = RockPaperScissors(max_cycles=2)
    >>> env.reset(seed=0)
    ({'player_0': 3, 'player_1': 3}, {'player_0': {}, 'player_1': {}})
    >>> _, rewards, _, truncations, _ = env.step({"player_0": 1, "player_1": 0})
    >>> rewards, truncations
    ({'player_0': 1.0, 'player_1': -1.0}, {'player_0': False, 'player_1': False})
    """

    render_mode = None

    def __init__(self, max_cycles: int = 10) -> None:
        if max_cycles < 1:
            raise ValueError(f"max_cycles must be at least 1, got {max_cycles}")
        self.metadata = {"name": "kit_rock_paper_scissors_v0", "render_modes": []}
        self.possible_agents = ["player_0", "player_1"]
        self.max_cycles = max_cycles
        self.agents: list[str] = []
        self.rounds = 0

    @functools.cache  # noqa: B019 (two agents, one env: PettingZoo's idiom)
    def observation_space(self, agent: str) -> Any:  # noqa: D102
        from gymnasium.spaces import Discrete

        return Discrete(4)

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> Any:  # noqa: D102
        from gymnasium.spaces import Discrete

        return Discrete(3)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
        """Start an episode: no round played yet."""
        self.agents = list(self.possible_agents)
        self.rounds = 0
        return {a: 3 for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: Mapping[str, int]) -> tuple[dict[str, Any], ...]:
        """Play one round."""
        first, second = (int(actions[a]) for a in self.possible_agents)
        score = float(((first - second) % 3 == 1) - ((second - first) % 3 == 1))
        self.rounds += 1
        over = self.rounds >= self.max_cycles
        agents = list(self.agents)
        observations = {"player_0": second, "player_1": first}
        rewards = {"player_0": score, "player_1": -score}
        if over:
            self.agents = []
        return (
            {a: observations[a] for a in agents},
            {a: rewards[a] for a in agents},
            {a: False for a in agents},
            {a: over for a in agents},
            {a: {} for a in agents},
        )

    @property
    def unwrapped(self) -> RockPaperScissors:
        """The env itself (PettingZoo's attribute: there is no wrapper)."""
        return self

    def render(self) -> None:  # noqa: D102
        return None

    def close(self) -> None:  # noqa: D102
        return None


class JointEnv:
    """A parallel env as one gymnasium-style env: the action is ``{agent: action}``.

    ``reset`` returns the observations dict; ``step`` returns it, a reward of
    0.0 (per-agent rewards are in the info), and terminated/truncated once
    no agent is left. The info holds ``rewards``, ``terminations``,
    ``truncations`` and ``infos``, each keyed by agent.

    Examples
    --------
    >>> env = JointEnv(RockPaperScissors(max_cycles=1))
    >>> env.reset(seed=0)[0]
    {'player_0': 3, 'player_1': 3}
    >>> obs, reward, terminated, truncated, info = env.step({"player_0": 2, "player_1": 1})
    >>> truncated, info["rewards"]
    (True, {'player_0': 1.0, 'player_1': -1.0})
    """

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the parallel env."""
        observations, infos = self.env.reset(seed=seed, options=options)
        return observations, {"infos": infos}

    def step(self, actions: Mapping[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step every agent at once."""
        observations, rewards, terminations, truncations, infos = self.env.step(dict(actions))
        over = not self.env.agents
        terminated = over and all(terminations.get(a, False) for a in actions)
        info = {
            "rewards": rewards,
            "terminations": terminations,
            "truncations": truncations,
            "infos": infos,
        }
        return observations, 0.0, terminated, over and not terminated, info

    def close(self) -> None:
        """Close the parallel env."""
        close = getattr(self.env, "close", None)
        if callable(close):
            close()


def joint_env(make_env: Callable[..., Any], **kwargs: Any) -> JointEnv:
    """Build ``JointEnv(make_env(**kwargs))``: a picklable factory for pools.

    Examples
    --------
    >>> env_fn = functools.partial(joint_env, RockPaperScissors, max_cycles=3)
    >>> env_fn().env.max_cycles
    3
    """
    return JointEnv(make_env(**kwargs))


class FrozenPolicy:
    """A copy of ``policy`` as it is now, fixed at ``version``: self-play's opponent.

    Examples
    --------
    >>> def rock(observations, rngs):
    ...     return [0 for _ in observations]
    >>> rock.version = 7
    >>> opponent = FrozenPolicy(rock)
    >>> opponent.name, opponent.version, opponent([3], [None])
    ('rock@7', 7, [0])
    """

    def __init__(self, policy: Policy, version: int | None = None, name: str | None = None):
        self.policy = copy.deepcopy(policy)
        self.version = int(getattr(policy, "version", 0) if version is None else version)
        base = getattr(policy, "name", None) or getattr(policy, "__name__", "policy")
        self.name = name or f"{base}@{self.version}"

    def __call__(self, observations: Sequence[Any], rngs: Sequence[Any], **kwargs: Any) -> Any:
        """Act as the copy does."""
        return self.policy(observations, rngs, **kwargs)


@dataclass(frozen=True)
class Lineup:
    """Which policy plays which agent; with ``swap``, odd episode ids swap the two seats.

    Examples
    --------
    >>> def p(o, r): return [0] * len(o)
    >>> lineup = Lineup({"player_0": p, "player_1": FrozenPolicy(p, 0)}, swap=True)
    >>> lineup.seats(0)["player_0"][0], lineup.seats(1)["player_0"][0]
    ('player_0', 'p@0')
    """

    policies: Mapping[str, Policy]
    swap: bool = False

    def __post_init__(self) -> None:
        if self.swap and len(self.policies) != 2:
            raise ValueError(f"swap needs two policies, got {len(self.policies)}")

    def seats(self, episode_id: int) -> dict[str, tuple[str, Policy]]:
        """``{agent: (policy name, policy)}`` for episode ``episode_id``."""
        agents = list(self.policies)
        players = [self.policies[a] for a in agents]
        names = [str(getattr(p, "name", None) or a) for a, p in zip(agents, players, strict=True)]
        if self.swap and episode_id % 2 == 1:
            players, names = players[::-1], names[::-1]
        return {a: (n, p) for a, n, p in zip(agents, names, players, strict=True)}


class _BattleLoop(EnvLoop):
    """An EnvLoop where each env step is every agent's move: one transition per agent."""

    def _transitions(self, current: _Slot, state: EnvState, slot: int) -> list[Transition]:
        episode = current.episode
        info = state.info or {}
        rewards = info.get("rewards", {})
        terminations = info.get("terminations", {})
        truncations = info.get("truncations", {})
        infos = info.get("infos", {})
        step = current.steps
        current.steps += 1
        next_obs = state.obs or {}
        return [
            Transition(
                current.obs[agent],
                action,
                float(rewards.get(agent, 0.0)),
                next_obs.get(agent),
                bool(terminations.get(agent, False)),
                bool(truncations.get(agent, False)),
                episode.episode_id,
                step,
                slot,
                self.worker,
                current.acted[agent][1],
                episode.seed,
                dict(infos.get(agent) or {}),
                agent,
                current.acted[agent][0],
            )
            for agent, action in current.action.items()
        ]

    def _act(
        self, slots: list[int], policy: Any, policy_kwargs: Mapping[str, Any], version: int
    ) -> None:
        lineup: Lineup = policy
        moves: dict[int, dict[str, Any]] = {slot: {} for slot in slots}
        by_agent: dict[str, list[int]] = {}
        for slot in slots:
            for agent in self.active[slot].obs:
                by_agent.setdefault(agent, []).append(slot)
        for agent, agent_slots in by_agent.items():
            # Seats can differ between episodes (swap): call each policy on its own rows.
            groups: dict[tuple[int, str], list[int]] = {}
            seats = {s: lineup.seats(self.active[s].episode.episode_id)[agent] for s in agent_slots}
            for s in agent_slots:
                # By name too: one policy object may sit in both seats (self-play, swap).
                groups.setdefault((id(seats[s][1]), seats[s][0]), []).append(s)
            for group in groups.values():
                name, player = seats[group[0]]
                chosen = [self.active[s] for s in group]
                actions = list(
                    player([c.obs[agent] for c in chosen], [c.rng for c in chosen], **policy_kwargs)
                )
                if len(actions) != len(group):
                    raise ValueError(
                        f"policy {name!r} returned {len(actions)} actions for {len(group)} "
                        "observations; it must return one action per observation"
                    )
                played = int(getattr(player, "version", 0))
                for current, s, action in zip(chosen, group, actions, strict=True):
                    moves[s][agent] = action
                    current.acted[agent] = (name, played)
        for slot in slots:
            self.active[slot].action = moves[slot]
        self.pool.send([moves[s] for s in slots], slots)


class BattleCollector(EnvUser):
    """Collect whole two-player episodes from a pool of :class:`JointEnv` envs.

    Parameters
    ----------
    pool
        A pool whose envs are :class:`JointEnv` (see :func:`joint_env`).
    lineup
        ``{agent: policy}`` or a :class:`Lineup` (``swap=True`` for both sides).

    Examples
    --------
    >>> import functools
    >>> from kit.rl.choose import get_worker_pool
    >>> pool = get_worker_pool(functools.partial(joint_env, RockPaperScissors, max_cycles=3),
    ...                        num_envs=2, mode="sync")
    >>> def rock(observations, rngs):
    ...     return [0 for _ in observations]
    >>> def paper(observations, rngs):
    ...     return [1 for _ in observations]
    >>> episodes = BattleCollector(pool, {"player_0": rock, "player_1": paper}).collect(2)
    >>> episodes[0].returns(by="policy"), episodes[0].length
    ({'player_0': -3.0, 'player_1': 3.0}, 6)
    >>> pool.close()
    """

    loop_class = _BattleLoop

    def __init__(
        self,
        pool: WorkerPool,
        lineup: Lineup | Mapping[str, Policy] | None = None,
        seed: int = 0,
        stream: int = TRAIN,
        worker: str = "driver",
    ) -> None:
        self._init_env_user(pool, seed, stream, worker, _lineup(lineup))
        self.next_episode_id = 0

    def collect(
        self,
        n_episode: int,
        lineup: Lineup | Mapping[str, Policy] | None = None,
        policy_kwargs: Mapping[str, Any] | None = None,
    ) -> list[Episode]:
        """Play the next ``n_episode`` episode ids to the end; return them in id order."""
        if n_episode < 1:
            raise ValueError(f"n_episode must be at least 1, got {n_episode}")
        chosen = self._policy(_lineup(lineup))
        ids = range(self.next_episode_id, self.next_episode_id + n_episode)
        self.next_episode_id += n_episode
        return self._loop().run_episodes(ids, chosen, policy_kwargs)


def _lineup(lineup: Lineup | Mapping[str, Policy] | None) -> Lineup | None:
    if lineup is None or isinstance(lineup, Lineup):
        return lineup
    return Lineup(dict(lineup))


@dataclass
class BattleResult:
    """What a battle evaluation found, per policy name.

    Examples
    --------
    >>> r = BattleResult({"a": [1.0, -1.0, 0.0]}, {"a": 1}, {"a": 1}, 1, [])
    >>> r.win_rate("a"), r.mean_return("a")
    (0.3333333333333333, 0.0)
    """

    returns: dict[str, list[float]]
    wins: dict[str, int]
    losses: dict[str, int]
    draws: int
    episodes: list[Episode] = field(repr=False, default_factory=list)

    def win_rate(self, name: str) -> float:
        """Share of the episodes ended normally that ``name`` won (NaN with none)."""
        games = len(self.returns.get(name, []))
        return self.wins.get(name, 0) / games if games else math.nan

    def mean_return(self, name: str) -> float:
        """Mean return of policy ``name`` (NaN when it never played)."""
        values = self.returns.get(name, [])
        return float(np.mean(values)) if values else math.nan


class BattleEvaluator(EnvUser):
    """Evaluate a lineup over the same ``n_episode`` evaluation episodes every time.

    Examples
    --------
    >>> import functools
    >>> from kit.rl.choose import get_worker_pool
    >>> pool = get_worker_pool(functools.partial(joint_env, RockPaperScissors, max_cycles=4),
    ...                        num_envs=2, mode="sync")
    >>> def rock(observations, rngs):
    ...     return [0 for _ in observations]
    >>> def paper(observations, rngs):
    ...     return [1 for _ in observations]
    >>> result = BattleEvaluator(pool, n_episode=4).eval(
    ...     Lineup({"player_0": rock, "player_1": paper}, swap=True))
    >>> result.win_rate("player_1"), result.draws
    (1.0, 0)
    >>> pool.close()
    """

    loop_class = _BattleLoop

    def __init__(
        self,
        pool: WorkerPool,
        n_episode: int = 10,
        seed: int = 0,
        lineup: Lineup | Mapping[str, Policy] | None = None,
    ) -> None:
        if n_episode < 1:
            raise ValueError(f"n_episode must be at least 1, got {n_episode}")
        self.n_episode = n_episode
        self._init_env_user(pool, seed, EVAL, "driver", _lineup(lineup))

    def eval(
        self,
        lineup: Lineup | Mapping[str, Policy] | None = None,
        policy_kwargs: Mapping[str, Any] | None = None,
    ) -> BattleResult:
        """Play episode ids 0 to ``n_episode - 1``; wins, losses, draws and returns by name."""
        chosen = self._policy(_lineup(lineup))
        episodes = self._loop().run_episodes(range(self.n_episode), chosen, policy_kwargs)
        returns: dict[str, list[float]] = {}
        wins: dict[str, int] = {}
        losses: dict[str, int] = {}
        draws = 0
        for episode in episodes:
            if not episode.ok:
                continue
            scores = episode.returns(by="policy")
            for name, value in scores.items():
                returns.setdefault(name, []).append(value)
            best = max(scores.values())
            leaders = [n for n, v in scores.items() if v == best]
            if len(leaders) != 1:
                draws += 1
                continue
            wins[leaders[0]] = wins.get(leaders[0], 0) + 1
            for name in scores:
                if name != leaders[0]:
                    losses[name] = losses.get(name, 0) + 1
        return BattleResult(returns, wins, losses, draws, episodes)
