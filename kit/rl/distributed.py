"""Distributed collection: episodes run on Dask workers, each with its envs built once.

This replaces DI-engine's coordinator and its Flask + file-system
communication. The envs live in an :class:`EnvPoolProvider` env (a worker
plugin, built once per worker, rebuilt on workers that join or restart);
the learner stays in the driver or notebook. Weights are broadcast to the
workers once per version (``client.scatter``) and every transition records
the version it was collected with; episodes come back as task results. A
collection is a Kit run over episode ids, so a worker killed mid-way costs
nothing but time: its chunk of ids runs again elsewhere, with the same
seeds, and each episode id is kept exactly once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from omegaconf import DictConfig

from kit._base.extras import install
from kit.cluster import get_session
from kit.provider import EnvironmentProvider
from kit.rl._seeding import TRAIN
from kit.rl._types import Episode
from kit.rl.choose import get_worker_pool
from kit.rl.collect import EnvLoop, Policy
from kit.rl.pool import WorkerPool
from kit.rl.workers import EnvFn
from kit.runner import Runner


def gym_env(env_id: str, **kwargs: Any) -> Any:
    """Build ``gymnasium.make(env_id, **kwargs)`` (gymnasium is the ``rl`` extra).

    Examples
    --------
    >>> gym_env("CartPole-v1").spec.id
    'CartPole-v1'
    """
    try:
        import gymnasium
    except ImportError:
        raise ImportError(f"kit.rl's gymnasium envs need gymnasium: {install('rl')}") from None
    return gymnasium.make(env_id, **kwargs)


def build_pool(
    env_fn: EnvFn,
    num_envs: int,
    mode: str = "sync",
    seed: int | None = 0,
    step_timeout: float | None = None,
    max_restarts: int | None = 10,
) -> dict[str, WorkerPool]:
    """Build ``{"pool": pool}``: the env a provider hands to collection tasks.

    Examples
    --------
    >>> import functools
    >>> env = build_pool(functools.partial(gym_env, "CartPole-v1"), 2)
    >>> env["pool"].num_envs
    2
    >>> env["pool"].cleanup()
    """
    pool = get_worker_pool(
        env_fn,
        num_envs=num_envs,
        mode=mode,
        seed=seed,
        step_timeout=step_timeout,
        max_restarts=max_restarts,
    )
    return {"pool": pool}


class EnvPoolProvider(EnvironmentProvider):
    """A pool of ``num_envs`` envs per worker (and one on the driver for inline runs).

    Config keys: ``env`` (a gymnasium id such as ``CartPole-v1``),
    ``num_envs`` (default 4), ``mode`` (``sync``, ``thread`` or ``auto``, which
    picks ``sync`` there: Dask worker processes are daemonic and cannot start env
    processes), ``make_kwargs``
    (for ``gymnasium.make``), ``step_timeout`` and ``max_restarts``. For an
    env gymnasium does not know, subclass and override :meth:`env_fn`.

    Examples
    --------
    >>> provider = EnvPoolProvider({"env": "CartPole-v1", "num_envs": 2})
    >>> pool = provider.build_env_local()["pool"]
    >>> pool.num_envs
    2
    >>> pool.cleanup()
    """

    def env_fn(self) -> EnvFn:
        """Return the factory each env slot is built (and rebuilt) from."""
        kwargs = dict(self.config.get("make_kwargs") or {})
        return functools.partial(gym_env, str(self.config.env), **kwargs)

    def _setup(self) -> Callable[[], dict[str, WorkerPool]]:
        cfg = self.config
        return functools.partial(
            build_pool,
            self.env_fn(),
            int(cfg.get("num_envs", 4)),
            str(cfg.get("mode", "sync")),
            cfg.get("seed", 0),
            cfg.get("step_timeout"),
            cfg.get("max_restarts", 10),
        )

    def build_env_local(self) -> dict[str, Any]:  # noqa: D102
        return self._setup()()

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:  # noqa: D102
        return self._setup()


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return "driver"


class _CollectEpisodes(Runner):
    @staticmethod
    def forward(
        ids: list[int],
        pool: WorkerPool,
        make_policy: Callable[[Any], Policy],
        weights: Any,
        version: int,
        seed: int,
        stream: int,
        policy_kwargs: Mapping[str, Any],
    ) -> list[Episode]:
        loop = EnvLoop(pool, seed, stream, _worker_name())
        return loop.run_episodes(ids, make_policy(weights), policy_kwargs, version)


class DistributedCollector:
    """Collect episodes on a Dask cluster (or inline) with weights broadcast by version.

    Parameters
    ----------
    provider
        Builds ``{"pool": WorkerPool}`` once per worker (an :class:`EnvPoolProvider`).
    make_policy
        ``make_policy(weights) -> policy``: a module-level function (it is
        sent to the workers).
    parallel
        Kit's ``parallel`` section (``env: inline | local | remote | slurm ...``).
    seed, stream
        The episode seed stream (:data:`kit.rl.collect.TRAIN` or :data:`kit.rl.collect.EVAL`).

    Examples
    --------
    >>> def make_policy(weights):
    ...     return lambda obs, rngs: [weights for _ in obs]
    >>> collector = DistributedCollector(
    ...     EnvPoolProvider({"env": "CartPole-v1", "num_envs": 2}), make_policy)
    >>> collector.set_weights(1, version=3)
    >>> episodes = collector.collect(4)
    >>> [e.episode_id for e in episodes], {v for e in episodes for v in e.policy_versions}
    ([0, 1, 2, 3], {3})
    """

    def __init__(
        self,
        provider: EnvironmentProvider,
        make_policy: Callable[[Any], Policy],
        *,
        parallel: DictConfig | Mapping[str, Any] | None = None,
        seed: int = 0,
        stream: int = TRAIN,
        retries: int = 2,
    ) -> None:
        num_envs = int(provider.config.get("num_envs", 1))
        self.runner = _CollectEpisodes(
            provider, parallel=parallel, batch_size=num_envs, on_error="raise", retries=retries
        )
        self.make_policy = make_policy
        self.seed = seed
        self.stream = stream
        self.next_episode_id = 0
        self.envstep = 0
        self.version = 0
        self._weights: Any = None

    @property
    def session(self) -> Any:
        """The Kit session (cluster and client) the collector runs on."""
        return get_session(self.runner.parallel)

    def set_weights(self, weights: Any, version: int) -> None:
        """Send ``weights`` to every worker once; later collections act with them."""
        client = self.session.client
        if client is not None:
            # In a list: a dict would be scattered key by key, under its own keys, and a
            # later version with the same keys would be taken for data already there.
            self._weights = client.scatter([weights], broadcast=True, hash=False)[0]
        else:
            self._weights = weights
        self.version = int(version)

    def collect(
        self,
        n_episode: int | None = None,
        *,
        episode_ids: Iterable[int] | None = None,
        policy_kwargs: Mapping[str, Any] | None = None,
        on_event: Any = None,
    ) -> list[Episode]:
        """Run the next ``n_episode`` ids (or exactly ``episode_ids``); return episodes by id."""
        if episode_ids is None:
            if n_episode is None or n_episode < 1:
                raise ValueError("give n_episode >= 1 or episode_ids")
            ids = list(range(self.next_episode_id, self.next_episode_id + n_episode))
            self.next_episode_id += n_episode
        else:
            ids = list(episode_ids)
        result = self.runner.run(
            ids,
            on_event=on_event,
            make_policy=self.make_policy,
            weights=self._weights,
            version=self.version,
            seed=self.seed,
            stream=self.stream,
            policy_kwargs=dict(policy_kwargs or {}),
        )
        episodes: list[Episode] = list(result.records)
        self.envstep += sum(e.length for e in episodes)
        return episodes
