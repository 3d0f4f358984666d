"""Per-episode seeds: an episode's randomness depends on its id alone.

Each episode gets its own :class:`numpy.random.SeedSequence`, derived from
``(seed, stream, episode_id)``; it yields the seed for ``env.reset`` and a
generator for the policy's action sampling. So an episode comes out the same
whichever env slot, worker or process runs it, and however many there are.
Training and evaluation use different streams, so their seeds never
coincide. The global numpy RNG is never used.
"""

from __future__ import annotations

import numpy as np

#: Stream numbers: collection for training and evaluation never share seeds.
TRAIN, EVAL = 0, 1


def episode_seed(seed: int, stream: int, episode_id: int) -> tuple[int, np.random.Generator]:
    """Return ``(env_seed, policy_rng)`` for one episode.

    Examples
    --------
    >>> env_seed, rng = episode_seed(0, TRAIN, 5)
    >>> env_seed == episode_seed(0, TRAIN, 5)[0], env_seed == episode_seed(0, EVAL, 5)[0]
    (True, False)
    >>> float(rng.random()) == float(episode_seed(0, TRAIN, 5)[1].random())
    True
    """
    sequence = np.random.SeedSequence(seed, spawn_key=(stream, episode_id))
    env_part, policy_part = sequence.spawn(2)
    env_seed = int(env_part.generate_state(1, dtype=np.uint32)[0])
    return env_seed, np.random.default_rng(policy_part)
