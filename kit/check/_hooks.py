"""What ``kit check`` asks of a runner: fields that may differ, an item's cost, its data."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from omegaconf import DictConfig

from kit.config import ParallelConfig, parallel_section
from kit.launch import RunRequest
from kit.result import Index

if TYPE_CHECKING:
    from kit.check import CheckResult
    from kit.runner import Runner


class CheckHooks:
    """The part of :class:`kit.Runner` that ``kit check`` reads; override what fits your runner."""

    #: Record fields that may differ between two runs of one item (timings,
    #: worker names): ``kit check`` does not compare them. Dotted paths.
    check_ignore: ClassVar[tuple[str, ...]] = ()
    #: Numbers of two runs of one item within this relative difference are
    #: the same to ``kit check`` (0: exactly; ``--rtol`` and ``check.rtol`` override it).
    check_rtol: ClassVar[float] = 0.0
    #: The name of a ``@staticmethod cost(idx, **env) -> float`` (like
    #: ``batch_by``'s) an item's time grows with, e.g. ``duration``: ``kit
    #: check`` scales the sample's times by it to forecast the full run. The
    #: ``cost_by`` option (``runner.cost_by`` in a config) sets it for one runner.
    cost_by: str | None = None

    #: The runner's :meth:`kit.Runner.summarize`.
    summarize: Callable[[list[Any]], dict[str, Any]]

    def check_summary(self, records: list[Any]) -> dict[str, Any]:
        """Return what ``kit check`` says of its sample's records (by default :meth:`summarize`'s).

        :class:`kit.asr.DecodeRunner` adds its WER and CER intervals.
        """
        return self.summarize(records)

    def check_items(self, indices: Sequence[Index], env: Mapping[str, Any]) -> list[str]:
        """Return what keeps items from running, one line an item; none by default.

        ``kit check`` calls it on the whole set with the env built in this
        process, so a problem anywhere in the set shows before the run
        starts. It should read headers, not data: :class:`kit.asr.DecodeRunner`
        checks every recording's rate, channels and sample width.
        """
        return []

    def check(
        self,
        indices: int | Iterable[Index],
        *,
        n: int = 20,
        seed: int = 0,
        rtol: float | None = None,
        ignore: Sequence[str] | None = None,
        target: DictConfig | Mapping[str, Any] | ParallelConfig | None = None,
        on_step: Callable[[str], None] | None = None,
        **forward_kwargs: Any,
    ) -> CheckResult:
        """Check the run over ``indices`` before running it in full: see :func:`kit.check.check`.

        ``n`` items spread over ``indices`` run in this process (twice), on
        the configured cluster and batched as configured; the verdict says
        whether they agree (or the likely cause), forecasts the full run on
        ``target`` (default: this runner's ``parallel``), and checks the
        whole set's items.
        """
        from kit.check._check import check

        where = (
            None
            if target is None
            else (target if isinstance(target, ParallelConfig) else parallel_section(target))
        )
        return check(
            RunRequest.of(cast("Runner", self), indices, **forward_kwargs),
            n=n,
            seed=seed,
            rtol=rtol,
            ignore=ignore,
            target=where,
            on_step=on_step,
        )
