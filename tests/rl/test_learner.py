"""Learner hooks in priority order, checkpoints that resume, reduced logs; the commander."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kit.rl import CheckpointHook, Learner, LogReduceHook
from kit.rl.commander import Commander, linear_schedule


class Counter:
    def __init__(self) -> None:
        self.total = 0.0

    def state_dict(self) -> dict[str, float]:
        return {"total": self.total}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.total = state["total"]


def make_learner(model: Counter) -> Learner:
    def step(x: float) -> dict[str, Any]:
        model.total += x
        return {"loss": x, "priority": [x]}

    return Learner(step, model=model)


def test_hooks_run_by_priority_then_registration_order() -> None:
    calls: list[str] = []
    learner = make_learner(Counter())
    for name, priority in [("late", 20), ("first", 1), ("tie-a", 10), ("tie-b", 10)]:
        learner.register_hook("before_iter", lambda _, n=name: calls.append(n), priority, name)
    learner.register_hook("before_run", lambda _: calls.append("run"))
    learner.register_hook("after_run", lambda _: calls.append("end"))
    learner.run([1.0])
    assert calls == ["run", "first", "tie-a", "tie-b", "late", "end"]
    assert learner.hooks("before_iter") == ["first", "tie-a", "tie-b", "late"]
    with pytest.raises(ValueError, match="position must be one of"):
        learner.register_hook("before_lunch", lambda _: None)


def test_learn_info_carries_the_iteration_and_priorities() -> None:
    learner = make_learner(Counter())
    learner.train(2.0)
    assert learner.learn_info == {"train_iter": 1, "loss": 2.0, "priority": [2.0]}


def test_checkpoints_save_and_resume(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pkl"
    model = Counter()
    learner = make_learner(model)
    CheckpointHook(path, every=2).attach(learner)
    learner.run([1.0, 2.0, 3.0])
    assert path.exists()
    fresh_model = Counter()
    fresh = make_learner(fresh_model)
    CheckpointHook(path, every=2).attach(fresh)
    fresh.start()  # before_run loads the checkpoint
    assert (fresh.train_iter, fresh_model.total) == (3, 6.0)


def test_log_reduction_empties_the_buffer() -> None:
    seen: list[tuple[int, dict[str, float]]] = []
    learner = make_learner(Counter())
    LogReduceHook(lambda it, means: seen.append((it, means)), every=3).attach(learner)
    for x in range(1, 7):
        learner.train(float(x))
    assert seen == [(3, {"loss": 2.0}), (6, {"loss": 5.0})]
    assert learner.log_buffer == []


def test_commander_turns_progress_into_collect_arguments() -> None:
    learner = SimpleNamespace(learn_info={"train_iter": 30})
    collector = SimpleNamespace(envstep=0)
    by_steps = Commander(learner, collector, {"eps": linear_schedule(1.0, 0.1, 100)})
    by_iters = Commander(
        learner, collector, {"eps": linear_schedule(1.0, 0.0, 60)}, by="train_iter"
    )
    assert by_steps.step() == {"policy_kwargs": {"eps": 1.0}}
    collector.envstep = 200
    assert by_steps.step() == {"policy_kwargs": {"eps": 0.1}}
    assert by_iters.step() == {"policy_kwargs": {"eps": 0.5}}
    with pytest.raises(ValueError, match="'envstep' or 'train_iter'"):
        Commander(learner, collector, {}, by="episodes")
