"""The run request: everything a run is made of, frozen once it is asked for."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from kit.config import ParallelConfig, RunnerConfig
from kit.provider import EnvironmentProvider
from kit.result import Index
from kit.task import Task
from kit.tracking import Tracking

if TYPE_CHECKING:
    from kit.store._formats import RecordWriter


@dataclass(frozen=True)
class RunRequest:
    """One run as asked for: what runs, over which items, where it goes.

    Every caller (``Runner.run``, ``kit run``, a sweep's trial, the run
    panel, a detached driver) makes one and hands it to
    :func:`kit.launch.assemble`. What differs from the runner as its user
    built it (a trial's folder, a check's parallel section, trackers the
    sweep takes over) is a field of the request: the runner itself is never
    changed, nor read again, so the same runner can be asked for many runs
    at once.

    Parameters
    ----------
    task
        What runs: what the runner's class declares (:class:`kit.task.Task`).
    provider
        Builds the env the task's ``forward`` is given.
    items
        The item indices (a range or a list of ints and strings).
    forward_kwargs
        Extra keyword arguments of every ``forward`` call.
    output_dir
        Where the run is stored; None keeps it in memory only.
    parallel
        Where it runs (the ``parallel`` section).
    tracking
        Where it is exported to, or None.
    draws_report
        Whether the run draws ``output_dir/report.html`` as it ends (a sweep
        draws its trials' reports itself).
    client
        A Dask client to run on instead of ``parallel`` (the runner's own,
        ``Runner(client=...)``); Kit never closes it.
    options
        The ``runner`` options the run uses: the runner's, or a copy (a
        check runs items one at a time, one a chunk).
    writer
        How records are stored (None: the one ``options.record_format`` names).

    Examples
    --------
    >>> from kit.examples.quickstart import Evaluate, ModelProvider, quickstart_config
    >>> request = RunRequest.of(Evaluate(ModelProvider(quickstart_config())), 3)
    >>> request.items, request.output_dir
    (range(0, 3), None)
    >>> request.replace(output_dir="runs/a").output_dir
    PosixPath('runs/a')
    """

    task: Task
    provider: EnvironmentProvider
    items: Sequence[Index]
    options: RunnerConfig
    forward_kwargs: Mapping[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    tracking: Tracking | None = None
    draws_report: bool = True
    client: Any = None
    writer: RecordWriter | None = None

    @classmethod
    def of(cls, runner: Any, indices: int | Iterable[Index], **forward_kwargs: Any) -> RunRequest:
        """Return the request of ``runner``'s (a :class:`kit.Runner`) run over ``indices``."""
        return cls(
            task=Task.of(runner),
            provider=runner.provider,
            items=normalize_indices(indices),
            options=runner.options,
            writer=runner.writer,
            forward_kwargs=dict(forward_kwargs),
            output_dir=runner.output_dir,
            parallel=runner.parallel,
            tracking=runner.tracking,
            client=runner.client,
        )

    def replace(self, **changes: Any) -> RunRequest:
        """Return a copy with ``changes`` (``output_dir`` may be a str; ``~`` is the home)."""
        if changes.get("output_dir") is not None:
            changes["output_dir"] = Path(changes["output_dir"]).expanduser()
        return dataclasses.replace(self, **changes)

    @property
    def config(self) -> DictConfig | None:
        """The provider's config, stored with the run (None if it has none)."""
        config = self.provider.config
        return config if isinstance(config, DictConfig) else None


def normalize_indices(indices: int | Iterable[Index]) -> Sequence[Index]:
    """Return ``indices`` as a range or a list, checking every item is an int or a str.

    Examples
    --------
    >>> normalize_indices(3)
    range(0, 3)
    >>> normalize_indices(["a", 2])
    ['a', 2]
    >>> normalize_indices([1, 2.5])
    Traceback (most recent call last):
    ...
    TypeError: indices[1] is 2.5 (float); indices must be ints or strings
    """
    if isinstance(indices, bool):
        raise TypeError("indices must be an int count or a list of ints or strings, not a bool")
    if isinstance(indices, int):
        if indices < 0:
            raise ValueError(f"indices: a count must be >= 0, got {indices}")
        return range(indices)
    if isinstance(indices, range):
        return indices
    if isinstance(indices, (str, bytes)) or not isinstance(indices, Iterable):
        raise TypeError(
            "indices must be an int count or a list of ints or strings, "
            f"got {type(indices).__name__}"
        )
    items = list(indices)
    for pos, index in enumerate(items):
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            try:
                import numpy as np

                if isinstance(index, np.integer):
                    items[pos] = int(index)
                    continue
            except ImportError:
                pass
            raise TypeError(
                f"indices[{pos}] is {index!r} ({type(index).__name__}); "
                "indices must be ints or strings"
            )
    return items
