"""One run's reuse: find the outputs it may take, hand the workers a forward that takes them, count.

:func:`plan_of` is asked when a run is assembled; the engine calls
:meth:`ReusePlan.wrap` once the run's folder is open (it knows then which
positions are still to run) and :meth:`ReusePlan.count` at the end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from kit._reuse.forward import ReusingForward
from kit._reuse.keys import forward_digest
from kit._reuse.stored import item_key, known_records, write_reuse
from kit.result import Index, RunResult

if TYPE_CHECKING:
    from kit._engine.spec import ChunkJob
    from kit.config import RunnerConfig
    from kit.provider import EnvironmentProvider
    from kit.task import Task


@dataclass
class ReusePlan:
    """What one run's forward outputs are keyed by, and how it takes those of runs beside it.

    Attributes
    ----------
    forward
        The digest of the run's forward: its code and its ``forward_keys`` values.
    provider
        Says the env's fingerprint and each item's (read on the driver).
    finish, verify, owner, ignore, rtol
        As :class:`~kit._reuse.forward.ReusingForward` takes them.
    known
        The records taken from other runs, by index (once :meth:`wrap` ran).
    """

    forward: str
    provider: EnvironmentProvider
    finish: Callable[[Any, Any], Any]
    verify: float
    owner: str
    ignore: Sequence[str] = ()
    rtol: float = 0.0
    known: dict[Index, Any] = field(default_factory=dict)

    def group(self) -> str:
        """Return what runs that share outputs share: forward and env (a sweep waits on it)."""
        from kit._base.fingerprint import parts_digest  # reads versions: not at import

        return parts_digest(self.forward, self.provider.reuse_fingerprint())

    def wrap(self, job: ChunkJob, folder: Path, pending: Sequence[tuple[int, int]]) -> ChunkJob:
        """Write the run's ``reuse.json``; return ``job`` sending what others made as known.

        ``pending`` are the run's position ranges still to run (a resumed
        run's stored chunks are its own, not reused).
        """
        indices = list(job.indices)
        contents = list(self.provider.item_fingerprints(indices))
        if len(contents) != len(indices) or not all(isinstance(c, str) for c in contents):
            raise TypeError(
                f"{type(self.provider).__qualname__}.item_fingerprints returned "
                f"{len(contents)} values for {len(indices)} items; return one string per item"
            )
        env = self.provider.reuse_fingerprint()
        write_reuse(folder, self.forward, env, indices, contents)
        wanted = {
            item_key(indices[p], contents[p]): indices[p]
            for start, stop in pending
            for p in range(start, stop)
        }
        self.known = known_records(folder.parent, folder, self.forward, env, wanted)
        if not self.known:
            return job
        forward = ReusingForward(
            job.forward,
            self.finish,
            self.known,
            self.verify,
            job.run_id,
            self.owner,
            tuple(self.ignore),
            self.rtol,
        )
        return dataclasses.replace(job, forward=forward)

    def count(self, result: RunResult) -> None:
        """Set ``result.stats.reused``: the items whose record was taken, not computed."""
        reused = sum(
            1
            for index, record in zip(result.indices, result.records, strict=True)
            if record is not None and index in self.known
        )
        result.stats = dataclasses.replace(result.stats, reused=reused)


def plan_of(
    task: Task,
    provider: EnvironmentProvider,
    options: RunnerConfig,
    config: DictConfig | None,
    output_dir: Path | None,
) -> ReusePlan | None:
    """Return how a run of ``task`` reuses outputs; None when it does not.

    It does not when the runner declares no ``forward_keys``, its
    ``runner.reuse`` is false, or it stores nothing (no ``output_dir``: its
    outputs are nobody's to take, and there is no folder beside it).
    """
    if task.forward_keys is None or not options.reuse or output_dir is None:
        return None
    return ReusePlan(
        forward_digest(task, config),
        provider,
        task.finish,
        options.verify,
        task.owner,
        task.check_ignore,
        task.check_rtol,
    )
