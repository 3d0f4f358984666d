"""The learner: a training step, hooks around it, and what it tells the commander.

Hooks are plain callbacks ``hook(learner)`` registered at ``before_run``,
``after_run``, ``before_iter`` or ``after_iter`` with a priority: lower runs
first, ties in registration order (DI-engine's LearnerHook, without the
registry).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kit._base.atomic import atomic_file

POSITIONS = ("before_run", "after_run", "before_iter", "after_iter")
Hook = Callable[["Learner"], None]


class Stateful(Protocol):
    """Anything with ``state_dict()`` and ``load_state_dict(state)`` (a model, an optimizer)."""

    def state_dict(self) -> Any: ...  # noqa: D102

    def load_state_dict(self, state: Any) -> Any: ...  # noqa: D102


@dataclass
class _Registered:
    priority: int
    order: int
    hook: Hook
    name: str


class Learner:
    """Run ``train_step(data) -> dict`` with hooks, counting iterations.

    ``train_step`` returns a dict of logged values (scalars), and may include
    ``"priority"`` (new priorities for a prioritized buffer); the latest dict
    and ``train_iter`` are in :attr:`learn_info` for the commander.

    Parameters
    ----------
    train_step
        One update on one batch.
    model
        What checkpoints save and load (``state_dict``/``load_state_dict``).

    Examples
    --------
    >>> calls = []
    >>> learner = Learner(lambda batch: {"loss": float(sum(batch))})
    >>> learner.register_hook("after_iter", lambda l: calls.append(("b", l.train_iter)), priority=2)
    >>> learner.register_hook("after_iter", lambda l: calls.append(("a", l.train_iter)), priority=1)
    >>> learner.train([1, 2])["loss"], calls
    (3.0, [('a', 1), ('b', 1)])
    >>> learner.learn_info
    {'train_iter': 1, 'loss': 3.0}
    """

    def __init__(
        self, train_step: Callable[[Any], Mapping[str, Any]], model: Stateful | None = None
    ) -> None:
        self.train_step = train_step
        self.model = model
        self.train_iter = 0
        self.last_info: dict[str, Any] = {}
        #: Logged values since the last reduction (see :class:`LogReduceHook`).
        self.log_buffer: list[dict[str, Any]] = []
        self._hooks: dict[str, list[_Registered]] = {p: [] for p in POSITIONS}
        self._order = 0

    def register_hook(
        self, position: str, hook: Hook, priority: int = 100, name: str | None = None
    ) -> None:
        """Call ``hook(learner)`` at ``position``; lower ``priority`` runs first."""
        if position not in POSITIONS:
            raise ValueError(f"position must be one of {', '.join(POSITIONS)}, got {position!r}")
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        self._order += 1
        label = str(name or getattr(hook, "__name__", type(hook).__name__))
        self._hooks[position].append(_Registered(priority, self._order, hook, label))
        self._hooks[position].sort(key=lambda r: (r.priority, r.order))

    def hooks(self, position: str) -> list[str]:
        """Names of the hooks at ``position``, in calling order."""
        return [r.name for r in self._hooks[position]]

    def call_hook(self, position: str) -> None:
        """Call the hooks registered at ``position``."""
        for registered in self._hooks[position]:
            registered.hook(self)

    def start(self) -> None:
        """Call the ``before_run`` hooks (e.g. load a checkpoint)."""
        self.call_hook("before_run")

    def close(self) -> None:
        """Call the ``after_run`` hooks (e.g. save a final checkpoint)."""
        self.call_hook("after_run")

    def train(self, data: Any) -> dict[str, Any]:
        """One iteration: ``before_iter`` hooks, ``train_step(data)``, ``after_iter`` hooks."""
        self.call_hook("before_iter")
        info = dict(self.train_step(data))
        self.train_iter += 1
        self.last_info = info
        self.log_buffer.append({k: v for k, v in info.items() if k != "priority"})
        self.call_hook("after_iter")
        return info

    def run(self, batches: Iterable[Any]) -> dict[str, Any]:
        """``start()``, ``train`` on every batch, ``close()``; return the last info."""
        self.start()
        try:
            for batch in batches:
                self.train(batch)
        finally:
            self.close()
        return self.last_info

    @property
    def learn_info(self) -> dict[str, Any]:
        """``train_iter`` and the latest step's values (priorities included)."""
        return {"train_iter": self.train_iter, **self.last_info}

    # ------------------------------------------------------------ checkpoints
    def save_checkpoint(self, path: str | os.PathLike[str]) -> Path:
        """Write ``train_iter`` and the model's state to ``path`` (atomically)."""
        state = {
            "train_iter": self.train_iter,
            "model": None if self.model is None else self.model.state_dict(),
        }
        target = Path(path)
        with atomic_file(target, "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        return target

    def load_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Restore ``train_iter`` and the model's state from ``path``."""
        with open(path, "rb") as f:
            state = pickle.load(f)
        self.train_iter = int(state["train_iter"])
        if self.model is not None and state["model"] is not None:
            self.model.load_state_dict(state["model"])


class CheckpointHook:
    """Save a checkpoint every ``every`` iterations (and at the end of a run).

    Register it with :meth:`attach`; it also loads ``path`` at ``before_run``
    when ``load=True`` and the file exists (resume after a restart).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ckpt.pkl"
    >>> learner = Learner(lambda batch: {"loss": 0.0})
    >>> _ = CheckpointHook(path, every=2).attach(learner)
    >>> _ = learner.run([1, 2, 3])
    >>> resumed = Learner(lambda batch: {})
    >>> _ = CheckpointHook(path).attach(resumed); resumed.start(); resumed.train_iter
    3
    """

    def __init__(self, path: str | os.PathLike[str], every: int = 1000, load: bool = True):
        self.path = Path(path)
        self.every = every
        self.load = load

    def attach(self, learner: Learner, priority: int = 50) -> CheckpointHook:
        """Register the save (``after_iter``, ``after_run``) and load (``before_run``) hooks."""
        learner.register_hook("before_run", self._load, priority, "load_checkpoint")
        learner.register_hook("after_iter", self._save_every, priority, "save_checkpoint")
        learner.register_hook("after_run", self._save, priority, "save_checkpoint_after_run")
        return self

    def _load(self, learner: Learner) -> None:
        if self.load and self.path.exists():
            learner.load_checkpoint(self.path)

    def _save_every(self, learner: Learner) -> None:
        if learner.train_iter % self.every == 0:
            learner.save_checkpoint(self.path)

    def _save(self, learner: Learner) -> None:
        learner.save_checkpoint(self.path)


class LogReduceHook:
    """Every ``every`` iterations, average the logged values and hand them to ``sink``.

    ``sink(train_iter, means)`` may print, write a file or feed a
    :class:`kit.rl.TrainingLog` (the dashboard). The learner's log buffer is
    emptied after each reduction, so it never grows without bound.

    Examples
    --------
    >>> seen = []
    >>> learner = Learner(lambda x: {"loss": x})
    >>> _ = LogReduceHook(lambda it, means: seen.append((it, means)), every=2).attach(learner)
    >>> for x in (1.0, 3.0, 5.0, 7.0): _ = learner.train(x)
    >>> seen
    [(2, {'loss': 2.0}), (4, {'loss': 6.0})]
    """

    def __init__(self, sink: Callable[[int, dict[str, float]], None], every: int = 100):
        self.sink = sink
        self.every = every

    def attach(self, learner: Learner, priority: int = 90) -> LogReduceHook:
        """Register at ``after_iter``."""
        learner.register_hook("after_iter", self, priority, "log_reduce")
        return self

    def __call__(self, learner: Learner) -> None:
        """Reduce when due."""
        if learner.train_iter % self.every or not learner.log_buffer:
            return
        sums: dict[str, list[float]] = {}
        for entry in learner.log_buffer:
            for key, value in entry.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    sums.setdefault(key, []).append(float(value))
        learner.log_buffer.clear()
        self.sink(learner.train_iter, {k: sum(v) / len(v) for k, v in sums.items()})
