"""What a run is: its chunks' shared part, where it runs, how it is stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from omegaconf import DictConfig

from kit._engine.chunk import BatchBy
from kit._engine.inject import ForwardSpec
from kit.config import ParallelConfig, RunnerConfig
from kit.provider import EnvironmentProvider
from kit.result import Index, RunResult
from kit.store._store import RunStore
from kit.store._version import code_digest, keyword_digests


@dataclass(frozen=True)
class ChunkJob:
    """The fixed part of a run's chunks; a chunk adds its ``(start, stop)``."""

    run_id: str
    forward: Callable[..., Any]
    forward_spec: ForwardSpec
    explicit: Mapping[str, Any]
    indices: Sequence[Index]
    batch_size: int | None
    batch_by: BatchBy | None = None


class OutputReuse(Protocol):
    """What the engine asks of a run that takes forward outputs of runs beside it.

    :class:`kit._reuse.ReusePlan` is the one there is; the engine knows only this.
    """

    def wrap(self, job: ChunkJob, folder: Path, pending: Sequence[tuple[int, int]]) -> ChunkJob:
        """Return ``job`` taking what others made, once the run's folder is open."""

    def count(self, result: RunResult) -> None:
        """Set ``result.stats.reused``, once the run has ended."""


@dataclass
class RunSpec:
    """Everything one run needs, fixed when it is prepared (nothing started yet)."""

    provider: EnvironmentProvider
    job: ChunkJob
    parallel: ParallelConfig
    #: A Dask client the user passed (``Runner(..., client=c)``); None: Kit's session.
    client: Any
    options: RunnerConfig
    store: RunStore | None
    runner_name: str
    summarize: Callable[[list[Any]], dict[str, Any]]
    config: DictConfig | None
    #: How the run takes forward outputs of runs beside it (None: it computes all).
    reuse: OutputReuse | None = None

    @property
    def run_id(self) -> str:
        """Short id of the run (names its Dask tasks and events)."""
        return self.job.run_id

    def manifest_request(self) -> dict[str, Any]:
        """Return what the store's manifest records of this run (``RunStore.run_manifest``)."""
        provider = type(self.provider)
        return {
            "config": self.config,
            "provider": f"{provider.__module__}.{provider.__qualname__}",
            "runner": self.runner_name,
            "batch_size": self.job.batch_size,
            "chunk_size": self.options.chunk_size,
            "indices": self.job.indices,
            "version": {
                "forward_code": code_digest(self.job.forward),
                "batch_by_code": code_digest(self.job.batch_by.size) if self.job.batch_by else None,
                "keywords": keyword_digests(self.job.explicit),
            },
        }

    @property
    def inline(self) -> bool:
        """Whether the run executes in this process (no Dask)."""
        return self.client is None and self.parallel.env == "inline"
