"""The task: what a runner's class declares, read once into Kit's own frozen object.

A :class:`kit.Runner` subclass says *what* runs: ``forward``, how items are
batched, ``summarize``, the report's sections, what reuse and ``kit check``
may rely on. When a run is asked for, Kit reads that into a :class:`Task`,
and every part of Kit below the runner (the run request, the engine's
assembly, reuse, the check) reads the task, never the runner: nothing is
added to, set on or changed in the user's class or object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit._engine.chunk import BatchBy
from kit._engine.inject import ForwardSpec
from kit.result import Index

__all__ = ["Task"]


@dataclass(frozen=True)
class Task:
    """What one runner declares, as a run reads it.

    Attributes
    ----------
    declared_by
        The runner's class (read for its name and module, never written).
    forward
        What the workers call for each item: ``forward``, or the runner's
        picklable wrapper of it (``task_forward``).
    forward_spec
        How the env is matched to ``forward``'s own parameters.
    batch_by
        Batching by size (``runner.batch_by``, ``runner.max_batch``), or None.
    summarize
        Aggregates a completed run's records.
    report_sections
        The parts the runner adds to ``report.html``.
    forward_keys, finish
        Reuse: the config keys ``forward`` reads (None: nothing is reused)
        and what is applied to a stored output.
    check_ignore, check_rtol, cost_by, cost, check_items, check_summary
        What ``kit check`` reads: fields that may differ, the tolerance of
        numbers, the feature an item's cost grows with (its name and method),
        the set's problems and what the sample's records say.

    Examples
    --------
    >>> from kit.examples.quickstart import Evaluate, ModelProvider, quickstart_config
    >>> task = Task.of(Evaluate(ModelProvider(quickstart_config())))
    >>> task.name, task.forward_keys, task.check_rtol
    ('kit.examples.quickstart.Evaluate', None, 0.0)
    """

    declared_by: type
    forward: Callable[..., Any]
    forward_spec: ForwardSpec
    batch_by: BatchBy | None
    summarize: Callable[[list[Any]], dict[str, Any]]
    report_sections: tuple[Callable[[Path], str], ...]
    forward_keys: tuple[str, ...] | None
    finish: Callable[[Any, Any], Any]
    check_ignore: tuple[str, ...]
    check_rtol: float
    cost_by: str | None
    cost: Callable[..., Any] | None
    check_items: Callable[[Sequence[Index], Mapping[str, Any]], list[str]]
    check_summary: Callable[[list[Any]], dict[str, Any]]

    @classmethod
    def of(cls, runner: Any) -> Task:
        """Read the task ``runner`` (a :class:`kit.Runner`) declares."""
        declared = type(runner)
        cost_by = runner.cost_by
        keys = declared.forward_keys
        return cls(
            declared_by=declared,
            forward=runner.task_forward(),
            forward_spec=runner.forward_spec,
            batch_by=runner.batch_by,
            summarize=runner.summarize,
            report_sections=tuple(runner.report_sections()),
            forward_keys=None if keys is None else tuple(keys),
            finish=declared.finish,
            check_ignore=tuple(runner.check_ignore),
            check_rtol=float(runner.check_rtol),
            cost_by=cost_by,
            cost=getattr(declared, cost_by, None) if cost_by else None,
            check_items=runner.check_items,
            check_summary=runner.check_summary,
        )

    @property
    def name(self) -> str:
        """The runner class's dotted name, as a run's manifest records it."""
        return f"{self.declared_by.__module__}.{self.declared_by.__qualname__}"

    @property
    def owner(self) -> str:
        """The runner class's own name, for messages (``Decode.forward_keys``)."""
        return self.declared_by.__qualname__
