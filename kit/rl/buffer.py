"""Replay buffers: uniform and prioritized, with exact snapshots.

Data pushed in is never modified: the buffer keeps its bookkeeping (unique
id, priority, use count, policy version) beside it. ``state_dict`` is a deep
snapshot that includes the buffer's own random generator, so after
``load_state_dict`` the next ``sample`` is the one the saved buffer would
have drawn. Sampling more than the buffer holds raises a ValueError (DI-engine
prints a warning and returns None).
"""

from __future__ import annotations

import copy
import os
import pickle
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kit._base.atomic import atomic_file

__all__ = ["PrioritizedReplayBuffer", "ReplayBuffer", "SampledBatch"]


@dataclass
class SampledBatch:
    """A sample: the data, where it sits (``indices``), its unique ``ids`` and IS ``weights``.

    Pass ``ids`` and ``indices`` back with new priorities to
    :meth:`PrioritizedReplayBuffer.update`.

    Examples
    --------
    >>> buffer = ReplayBuffer(4, seed=0)
    >>> buffer.push(["a", "b"])
    >>> batch = buffer.sample(2)
    >>> type(batch).__name__, len(batch.data), batch.weights.tolist()
    ('SampledBatch', 2, [1.0, 1.0])
    """

    data: list[Any]
    indices: np.ndarray
    ids: np.ndarray
    weights: np.ndarray


def episode_runs(items: Sequence[Any], slots: np.ndarray, unroll_len: int) -> list[list[int]]:
    """Return the slots of every run of ``unroll_len`` steps in a row of one episode.

    ``items`` are held in ``slots`` (oldest first); a run never crosses an
    episode's end or a missing step.

    Examples
    --------
    >>> from types import SimpleNamespace as T
    >>> steps = [T(env_index=0, episode_id=0, step=t) for t in (0, 1, 3)]
    >>> episode_runs(steps, np.array([5, 6, 7]), 2)  # step 2 is gone: no run 1-3
    [[5, 6]]
    """
    episodes: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
    for slot, item in zip(slots, items, strict=True):
        try:
            env = item.env_index if hasattr(item, "env_index") else item.env_id
            key = (getattr(item, "worker", ""), env, item.episode_id)
            step = int(item.step)
        except AttributeError:
            raise ValueError(
                "sequence sampling needs items with env_index, episode_id and step "
                f"(kit.rl.Transition); the buffer holds a {type(item).__name__}"
            ) from None
        episodes.setdefault(key, []).append((step, int(slot)))
    runs = []
    for steps in episodes.values():
        steps.sort()
        for i in range(len(steps) - unroll_len + 1):
            window = steps[i : i + unroll_len]
            if window[-1][0] - window[0][0] == unroll_len - 1:
                runs.append([slot for _, slot in window])
    return runs


class ReplayBuffer:
    """A circular buffer sampled uniformly, with or without replacement.

    Parameters
    ----------
    capacity
        Items kept; the oldest are overwritten.
    seed
        Seeds the buffer's own generator (the global numpy RNG is not used).
    max_use
        Drop an item once it has been sampled this many times (None: never).
    max_staleness
        With :meth:`sample`'s ``policy_version``, items collected with a policy
        more than this many versions older are dropped instead of sampled.
        An item's version is its ``policy_version`` attribute (a
        :class:`~kit.rl.Transition` has one) or the ``version`` given to
        :meth:`push`.

    Examples
    --------
    >>> buffer = ReplayBuffer(capacity=3, seed=0)
    >>> buffer.push([{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}])
    >>> buffer.count()
    3
    >>> {d["x"] for d in buffer.sample(3).data} <= {2, 3, 4}  # the oldest was overwritten
    True
    >>> state = buffer.state_dict()
    >>> first = buffer.sample(2).ids.tolist()
    >>> buffer.load_state_dict(state); buffer.sample(2).ids.tolist() == first
    True
    """

    def __init__(
        self,
        capacity: int,
        *,
        seed: int | None = 0,
        max_use: int | None = None,
        max_staleness: int | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.max_use = max_use
        self.max_staleness = max_staleness
        self._rng = np.random.default_rng(seed)
        self._lock = threading.RLock()
        self._data: list[Any] = [None] * capacity
        self._valid = np.zeros(capacity, dtype=bool)
        self._ids = np.full(capacity, -1, dtype=np.int64)
        self._uses = np.zeros(capacity, dtype=np.int64)
        self._versions = np.zeros(capacity, dtype=np.int64)
        self._next = 0  # slot the next push writes
        self.push_count = 0

    # ------------------------------------------------------------ writing
    def push(self, data: Any, version: int | None = None) -> None:
        """Add one item, or every item of a list."""
        items = data if isinstance(data, list) else [data]
        with self._lock:
            for item in items:
                self._write(item, version)

    def _write(self, item: Any, version: int | None) -> int:
        slot = self._next
        self._data[slot] = item
        self._valid[slot] = True
        self._ids[slot] = self.push_count
        self._uses[slot] = 0
        self._versions[slot] = (
            version if version is not None else int(getattr(item, "policy_version", 0))
        )
        self._next = (slot + 1) % self.capacity
        self.push_count += 1
        return slot

    def _drop(self, slots: Iterable[int]) -> None:
        for slot in slots:
            self._valid[slot] = False
            self._data[slot] = None

    def clear(self) -> None:
        """Remove everything (the id counter goes on, so old ids stay unique)."""
        with self._lock:
            self._drop(np.flatnonzero(self._valid))

    def count(self) -> int:
        """Items held."""
        return int(self._valid.sum())

    __len__ = count

    # ------------------------------------------------------------ sampling
    def sample(
        self,
        batch_size: int,
        *,
        replace: bool = True,
        sample_range: slice | None = None,
        policy_version: int | None = None,
    ) -> SampledBatch:
        """Draw ``batch_size`` items (ValueError when fewer are held).

        Parameters
        ----------
        batch_size
            Items to draw.
        replace
            Draw with replacement (an item may come twice), or without.
        sample_range
            Draw only among the held items this slice of them picks, oldest
            first: ``slice(-100, None)`` is the newest 100 (DI-engine's
            ``sample_range``).
        policy_version
            The learner's policy version now: with ``max_staleness``, items
            more than that many versions older are dropped first. Keyword-only,
            so DI-engine's ``sample(n, learner_iter)`` is an error, not a version.

        Examples
        --------
        >>> buffer = ReplayBuffer(10, seed=0)
        >>> buffer.push(list(range(10)))
        >>> sorted(buffer.sample(3, replace=False, sample_range=slice(-3, None)).data)
        [7, 8, 9]
        """
        with self._lock:
            if policy_version is not None and self.max_staleness is not None:
                stale = self._valid & (self._versions < policy_version - self.max_staleness)
                self._drop(np.flatnonzero(stale))
            held = self._held()
            candidates = held if sample_range is None else held[sample_range]
            where = "" if sample_range is None else f" in sample_range {sample_range}"
            if batch_size > len(candidates):
                raise ValueError(
                    f"cannot sample {batch_size} items: the buffer holds {len(candidates)}"
                    f"{where}; collect more before sampling, or sample fewer"
                )
            slots, weights = self._choose(batch_size, candidates, replace)
            return self._take(slots, weights)

    def sample_sequences(
        self, batch_size: int, unroll_len: int, *, replace: bool = True
    ) -> SampledBatch:
        """Draw ``batch_size`` runs of ``unroll_len`` consecutive steps of one episode.

        Items must be :class:`~kit.rl.Transition` objects (or have ``env_index`` or ``env_id``,
        ``episode_id`` and ``step``); a run never crosses an episode's end or
        a step the buffer no longer holds. Runs are drawn uniformly, in a
        prioritized buffer too. ``data`` holds one list per run, and
        ``indices`` and ``ids`` have shape ``(batch_size, unroll_len)``.

        Examples
        --------
        >>> from types import SimpleNamespace as T
        >>> buffer = ReplayBuffer(16, seed=0)
        >>> buffer.push([T(env_index=e, episode_id=0, step=t) for t in range(3) for e in (0, 1)])
        >>> run = buffer.sample_sequences(1, 3).data[0]
        >>> len({x.env_index for x in run}), [x.step for x in run]  # one env's steps, in order
        (1, [0, 1, 2])
        """
        if unroll_len < 1:
            raise ValueError(f"unroll_len must be at least 1, got {unroll_len}")
        with self._lock:
            held = self._held()
            starts = episode_runs([self._data[slot] for slot in held], held, unroll_len)
            if batch_size > len(starts):
                raise ValueError(
                    f"cannot sample {batch_size} runs of {unroll_len} steps: the buffer holds "
                    f"{len(starts)}; collect more before sampling, or sample fewer or shorter"
                )
            chosen = self._rng.choice(len(starts), size=batch_size, replace=replace)
            runs = np.array([starts[i] for i in chosen], dtype=np.int64).reshape(
                batch_size, unroll_len
            )
            batch = SampledBatch(
                [[self._data[s] for s in run] for run in runs],
                runs,
                self._ids[runs].copy(),
                np.ones(batch_size),
            )
            self._count_uses(runs.ravel())
            return batch

    def _held(self) -> np.ndarray:
        """Slots holding an item, oldest first."""
        slots = np.flatnonzero(self._valid)
        return slots[np.argsort(self._ids[slots], kind="stable")]

    def _take(self, slots: np.ndarray, weights: np.ndarray) -> SampledBatch:
        batch = SampledBatch(
            [self._data[s] for s in slots], slots, self._ids[slots].copy(), weights
        )
        self._count_uses(slots)
        return batch

    def _count_uses(self, slots: np.ndarray) -> None:
        np.add.at(self._uses, slots, 1)
        if self.max_use is not None:
            self._drop(slots[self._uses[slots] >= self.max_use])

    def _choose(
        self, batch_size: int, candidates: np.ndarray, replace: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        slots = self._rng.choice(candidates, size=batch_size, replace=replace)
        return slots, np.ones(batch_size)

    def update(self, info: Mapping[str, Sequence[Any]]) -> int:
        """Nothing to update in a uniform buffer; returns 0 (kept for a common interface)."""
        return 0

    # ------------------------------------------------------------ snapshots
    def state_dict(self) -> dict[str, Any]:
        """Return a deep snapshot of the buffer, its bookkeeping and its random generator."""
        with self._lock:
            return copy.deepcopy(
                {key: value for key, value in self.__dict__.items() if key not in ("_lock", "_rng")}
                | {"_rng_state": self._rng.bit_generator.state}
            )

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a snapshot from :meth:`state_dict`."""
        state = dict(copy.deepcopy(dict(state)))
        rng_state = state.pop("_rng_state")
        with self._lock:
            self.__dict__.update(state)
            self._rng = np.random.default_rng()
            self._rng.bit_generator.state = rng_state

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the snapshot to ``path`` (atomically: a temp file, then a rename)."""
        target = Path(path)
        with atomic_file(target, "wb") as f:
            pickle.dump(self.state_dict(), f, protocol=pickle.HIGHEST_PROTOCOL)
        return target

    def load(self, path: str | os.PathLike[str]) -> None:
        """Read a snapshot written by :meth:`save`."""
        with open(path, "rb") as f:
            self.load_state_dict(pickle.load(f))


class PrioritizedReplayBuffer(ReplayBuffer):
    """Prioritized replay (Schaul et al.): P(i) ~ p_i^alpha, importance weights with beta.

    An item's weight is ``(N * P(i)) ** -beta`` over the largest any stored
    item could get (the least likely one's), so weights are at most 1.

    New items get the highest priority seen so far. ``beta`` anneals
    linearly to 1 over ``beta_steps`` calls to :meth:`sample`. Priority
    updates name both the slot (``indices``) and the item's unique ``ids``:
    an update for an item that has since been overwritten or dropped is
    ignored.

    Examples
    --------
    >>> buffer = PrioritizedReplayBuffer(capacity=8, alpha=1.0, seed=0)
    >>> buffer.push(list(range(4)))
    >>> batch = buffer.sample(2)
    >>> buffer.update({"indices": batch.indices, "ids": batch.ids, "priorities": [5.0, 5.0]})
    2
    >>> buffer.update({"indices": [0], "ids": [99], "priorities": [1.0]})  # stale: ignored
    0
    """

    def __init__(
        self,
        capacity: int,
        *,
        alpha: float = 0.6,
        beta: float = 0.4,
        beta_steps: int = 100_000,
        eps: float = 1e-6,
        **kwargs: Any,
    ) -> None:
        super().__init__(capacity, **kwargs)
        if alpha < 0 or not 0 <= beta <= 1:
            raise ValueError(f"need alpha >= 0 and 0 <= beta <= 1, got alpha={alpha}, beta={beta}")
        self.alpha = alpha
        self.beta_start = beta
        self.beta_steps = max(1, beta_steps)
        self.eps = eps
        self.samples_drawn = 0
        self._priorities = np.zeros(capacity, dtype=np.float64)
        self._max_priority = 1.0

    @property
    def beta(self) -> float:
        """The current importance-sampling exponent."""
        progress = min(1.0, self.samples_drawn / self.beta_steps)
        return self.beta_start + (1.0 - self.beta_start) * progress

    def _write(self, item: Any, version: int | None) -> int:
        slot = super()._write(item, version)
        self._priorities[slot] = self._max_priority
        return slot

    def _choose(
        self, batch_size: int, candidates: np.ndarray, replace: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        scaled = self._priorities[candidates] ** self.alpha
        if not replace and np.count_nonzero(scaled) < batch_size:
            raise ValueError(
                f"cannot sample {batch_size} items without replacement: only "
                f"{np.count_nonzero(scaled)} have a priority above 0"
            )
        probs = scaled / scaled.sum()
        picked = self._rng.choice(len(candidates), size=batch_size, replace=replace, p=probs)
        weights = (len(candidates) * probs[picked]) ** (-self.beta)
        # Normalised by the largest weight any item could get (the least likely one's),
        # as the PER paper and DI-engine do: not by this batch's, or a batch of one
        # would always weigh 1.
        largest = (len(candidates) * probs[probs > 0].min()) ** (-self.beta)
        self.samples_drawn += 1
        return candidates[picked], weights / largest

    def update(self, info: Mapping[str, Sequence[Any]]) -> int:
        """Set ``priorities`` for (``indices``, ``ids``); return how many were applied."""
        indices = np.asarray(info["indices"], dtype=np.int64)
        ids = np.asarray(info["ids"], dtype=np.int64)
        priorities = np.asarray(info["priorities"], dtype=np.float64)
        if not len(indices) == len(ids) == len(priorities):
            raise ValueError("indices, ids and priorities must have the same length")
        if np.any(priorities < 0) or not np.all(np.isfinite(priorities)):
            raise ValueError("priorities must be finite and non-negative")
        with self._lock:
            live = self._valid[indices] & (self._ids[indices] == ids)
            values = priorities[live] + self.eps
            self._priorities[indices[live]] = values
            if len(values):
                self._max_priority = max(self._max_priority, float(values.max()))
            return int(live.sum())
