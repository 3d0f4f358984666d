"""Replay buffers: circular, exact snapshots, priorities guarded by unique ids."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from kit.rl import ReplayBuffer, Transition
from kit.rl.buffer import PrioritizedReplayBuffer


def test_circular_overwrite_and_counts() -> None:
    buffer = ReplayBuffer(4, seed=0)
    buffer.push(list(range(6)))
    assert buffer.count() == 4 and buffer.push_count == 6
    assert set(buffer.sample(4).data) <= {2, 3, 4, 5}
    buffer.clear()
    assert buffer.count() == 0


def test_too_little_data_is_a_clear_error() -> None:
    buffer = ReplayBuffer(10)
    buffer.push([1, 2])
    with pytest.raises(ValueError, match="cannot sample 3 items: the buffer holds 2"):
        buffer.sample(3)


@pytest.mark.parametrize("kind", [ReplayBuffer, PrioritizedReplayBuffer])
def test_after_save_and_load_the_next_sample_is_identical(kind: type, tmp_path: Path) -> None:
    buffer = kind(50, seed=3)
    buffer.push([{"i": i} for i in range(40)])
    buffer.sample(8)
    state = buffer.state_dict()
    path = buffer.save(tmp_path / "buffer.pkl")
    expected = buffer.sample(16)
    restored = kind(50, seed=99)
    restored.load_state_dict(state)
    again = restored.sample(16)
    assert again.ids.tolist() == expected.ids.tolist()
    assert np.allclose(again.weights, expected.weights)
    from_file = kind(50, seed=98)
    from_file.load(path)
    assert from_file.sample(16).ids.tolist() == expected.ids.tolist()


def test_the_snapshot_is_deep() -> None:
    buffer = ReplayBuffer(5, seed=0)
    buffer.push([{"v": 1}])
    state = buffer.state_dict()
    buffer.push([{"v": 2}])
    restored = ReplayBuffer(5)
    restored.load_state_dict(state)
    assert restored.count() == 1


def test_user_data_is_never_mutated() -> None:
    items = [{"obs": [1, 2], "reward": 1.0} for _ in range(6)]
    pristine = copy.deepcopy(items)
    buffer = PrioritizedReplayBuffer(10, seed=0)
    buffer.push(items)
    batch = buffer.sample(4)
    buffer.update({"indices": batch.indices, "ids": batch.ids, "priorities": [2.0] * 4})
    assert items == pristine
    assert all(set(d) == {"obs", "reward"} for d in batch.data)


def test_priorities_shape_the_sampling() -> None:
    buffer = PrioritizedReplayBuffer(4, alpha=1.0, seed=0)
    buffer.push(["a", "b", "c", "d"])
    buffer.update({"indices": [0, 1, 2, 3], "ids": [0, 1, 2, 3], "priorities": [9, 1, 1, 1]})
    drawn = [x for _ in range(200) for x in buffer.sample(4).data]
    share = drawn.count("a") / len(drawn)
    assert 0.65 < share < 0.85  # expected 9/12


def test_importance_weights_and_beta_annealing() -> None:
    buffer = PrioritizedReplayBuffer(4, alpha=1.0, beta=0.5, beta_steps=10, seed=0)
    buffer.push(["a", "b"])
    buffer.update({"indices": [0, 1], "ids": [0, 1], "priorities": [3.0, 1.0]})
    batch = buffer.sample(2)
    probs = {"a": 0.75, "b": 0.25}
    raw = [(2 * probs[x]) ** -0.5 for x in batch.data]
    largest = (2 * min(probs.values())) ** -0.5  # the least likely item's, not the batch's
    assert np.allclose(batch.weights, np.array(raw) / largest, atol=1e-5)
    for _ in range(20):
        buffer.sample(1)
    assert buffer.beta == 1.0


def test_a_batch_of_the_likeliest_item_weighs_less_than_one() -> None:
    buffer = PrioritizedReplayBuffer(4, alpha=1.0, beta=1.0, seed=0)
    buffer.push(["a", "b"])
    buffer.update({"indices": [0, 1], "ids": [0, 1], "priorities": [1e6, 1.0]})
    (weight,) = buffer.sample(1).weights  # "a" (P ~ 1): its weight is P(b) / P(a) ~ 1e-6
    assert weight < 1e-3


def test_stale_priority_updates_are_ignored() -> None:
    buffer = PrioritizedReplayBuffer(2, seed=0)
    buffer.push(["old"])
    batch = buffer.sample(1)
    buffer.push(["x", "new"])  # slot 0 now holds another item
    applied = buffer.update({"indices": batch.indices, "ids": batch.ids, "priorities": [50.0]})
    assert applied == 0
    with pytest.raises(ValueError, match="finite and non-negative"):
        buffer.update({"indices": [0], "ids": [2], "priorities": [-1.0]})


def test_max_use_drops_items_after_that_many_samples() -> None:
    buffer = ReplayBuffer(4, seed=0, max_use=1)
    buffer.push([1, 2, 3, 4])
    first = buffer.sample(2)
    assert buffer.count() == 4 - len(set(first.indices.tolist()))


def test_max_staleness_drops_old_policy_data() -> None:
    buffer = ReplayBuffer(10, seed=0, max_staleness=2)
    buffer.push(["v0"], version=0)
    buffer.push(["v5"], version=5)
    assert buffer.sample(1, policy_version=5).data == ["v5"]
    assert buffer.count() == 1


@pytest.mark.parametrize("kind", [ReplayBuffer, PrioritizedReplayBuffer])
def test_sampling_without_replacement_and_from_a_range(kind: type[ReplayBuffer]) -> None:
    buffer = kind(32, seed=1)
    buffer.push(list(range(40)))  # holds 8..39, oldest first
    batch = buffer.sample(32, replace=False)
    assert sorted(batch.data) == list(range(8, 40))
    newest = buffer.sample(5, replace=False, sample_range=slice(-5, None))
    assert sorted(newest.data) == [35, 36, 37, 38, 39]
    assert set(buffer.sample(2, sample_range=slice(0, 2)).data) <= {8, 9}
    with pytest.raises(ValueError, match=r"holds 2 in sample_range slice\(0, 2, None\)"):
        buffer.sample(3, replace=False, sample_range=slice(0, 2))


def test_a_positional_learner_iter_is_refused_not_read_as_a_policy_version() -> None:
    buffer = ReplayBuffer(8, seed=0, max_staleness=1)
    buffer.push(list(range(4)))
    with pytest.raises(TypeError, match="positional"):
        buffer.sample(2, 1000)  # type: ignore[call-arg, arg-type]


def transition(env_index: int, episode_id: int, step: int) -> Transition:
    return Transition(
        obs=step,
        action=0,
        reward=1.0,
        next_obs=step + 1,
        terminated=False,
        truncated=False,
        episode_id=episode_id,
        step=step,
        env_index=env_index,
        worker="w",
        policy_version=0,
        seed=0,
    )


def test_sequences_are_consecutive_steps_of_one_episode() -> None:
    buffer = ReplayBuffer(64, seed=0)
    # Two envs interleaved; env 1's episode 0 is 2 steps long, too short for a run.
    buffer.push([transition(0, 0, t) for t in range(5)])
    buffer.push([transition(1, 0, t) for t in range(2)])
    buffer.push([transition(1, 1, t) for t in range(4)])
    # 3 runs in env 0's episode, 2 in env 1's second one.
    batch = buffer.sample_sequences(5, 3, replace=False)
    assert batch.indices.shape == batch.ids.shape == (5, 3)
    for run in batch.data:
        assert len({(x.env_index, x.episode_id) for x in run}) == 1
        assert [x.step for x in run] == list(range(run[0].step, run[0].step + 3))
    starts = sorted((r[0].env_index, r[0].episode_id, r[0].step) for r in batch.data)
    assert starts == [(0, 0, 0), (0, 0, 1), (0, 0, 2), (1, 1, 0), (1, 1, 1)]
    with pytest.raises(ValueError, match="cannot sample 6 runs of 3 steps: the buffer holds 5"):
        buffer.sample_sequences(6, 3, replace=False)


def test_sequences_need_transitions() -> None:
    buffer = ReplayBuffer(8)
    buffer.push([1, 2, 3])
    with pytest.raises(ValueError, match=r"needs items with env_index, episode_id and step"):
        buffer.sample_sequences(1, 2)
