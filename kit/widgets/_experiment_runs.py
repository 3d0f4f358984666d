"""What the Experiment app keeps, without a widget: its runs folder, its history, its runners.

:class:`ExperimentRuns` is the app's model: how a config as edited becomes a
runner, where each run and sweep is stored, and the history read back from
there. :class:`~kit.widgets.Experiment` draws it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from kit import EnvironmentProvider, RunHandle, Runner
from kit.config import ParallelConfig, to_overrides
from kit.history import new_run_dir, read_history, record_experiment, record_unstarted
from kit.tracking import Tracking

if TYPE_CHECKING:
    from kit import SweepHandle


class ExperimentRuns:
    """An experiment's runs: built from a base config as edited, stored in ``runs_dir``.

    Parameters
    ----------
    base
        The experiment's config as loaded (the first run's changes are against it).
    provider_cls, runner_cls
        Built as ``runner_cls(provider_cls(config), parallel=..., **config.runner)``.
    runs_dir
        Where the runs are stored, one numbered folder each; the history is
        read back from there, so it survives a kernel restart and other
        notebooks on the same folder show the same runs.

    Examples
    --------
    >>> import tempfile
    >>> from omegaconf import OmegaConf
    >>> from kit.examples.quickstart import Evaluate, ModelProvider
    >>> base = OmegaConf.create({"model": {"coefficients": [0.0, 1.0]}})
    >>> runs = ExperimentRuns(base, ModelProvider, Evaluate, tempfile.mkdtemp())
    >>> type(runs.make_runner(base, parallel=None, tracking=None)).__name__, runs.history
    ('Evaluate', [])
    """

    def __init__(
        self,
        base: DictConfig,
        provider_cls: type[EnvironmentProvider],
        runner_cls: type[Runner],
        runs_dir: str | os.PathLike[str],
    ) -> None:
        self.base = base
        self.provider_cls = provider_cls
        self.runner_cls = runner_cls
        self.runs_dir = Path(runs_dir)
        #: Every run stored in ``runs_dir`` (other notebooks' too), as history rows.
        self.history: list[dict[str, Any]] = read_history(self.runs_dir)
        #: The runs this app started, oldest first (their folders' names in runs_dir).
        self.runs: list[str] = []
        self.run_dir: Path | None = None

    def make_runner(
        self, cfg: DictConfig, parallel: ParallelConfig | None, tracking: Tracking | None
    ) -> Runner:
        """Build the runner for ``cfg``, as ``kit run`` would, on ``parallel``."""
        options: dict[str, Any] = {}
        if "runner" in cfg:
            container = OmegaConf.to_container(cfg.runner, resolve=True)
            assert isinstance(container, dict)
            options = {str(k): v for k, v in container.items() if k != "_target_"}
        if tracking is not None:
            made = tuple(to_overrides(self.base, cfg))
            tracking = dataclasses.replace(tracking, overrides=made)
        return self.runner_cls(
            self.provider_cls(cfg), parallel=parallel, tracking=tracking, **options
        )

    def next_run_dir(self, config: DictConfig, selection: dict[str, Any]) -> Path:
        """Make the next run's numbered folder, with its config and items stored before it runs."""
        self.run_dir = new_run_dir(self.runs_dir)
        self.runs.append(self.run_dir.name)
        record_experiment(self.run_dir, config, selection)
        return self.run_dir

    def record(self, handle: RunHandle, config: DictConfig) -> None:
        """Store how the latest run ended (one that never began too); read the history again."""
        if self.run_dir is not None:
            error = handle.exception()
            record_unstarted(
                self.run_dir,
                config,
                str(handle.status),
                None if error is None else f"{type(error).__name__}: {error}",
                handle.progress.total,
            )
        self.refresh()

    def refresh(self) -> None:
        """Read the history again from ``runs_dir`` (runs from other notebooks too)."""
        self.history = read_history(self.runs_dir)

    def compare(self, runs: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Return the history rows of the runs this app started (or of ``runs``)."""
        return read_history(self.runs_dir, list(runs) if runs is not None else self.runs)

    def submit_sweep(
        self,
        config: DictConfig,
        overrides: Sequence[str],
        make_runner: Any,
        items: list[Any],
        **options: Any,
    ) -> SweepHandle:
        """Start a grid over ``config`` into the next ``sweep-NNN`` folder, on ``items``.

        ``make_runner(cfg)`` builds each trial's runner; ``options`` go to
        :func:`kit.submit_sweep`. A sweep refused before it began leaves no folder.
        """
        from kit import submit_sweep

        def build(cfg: DictConfig) -> tuple[Runner, list[Any]]:
            return make_runner(cfg), items

        folder = new_run_dir(self.runs_dir, prefix="sweep-")
        try:
            return submit_sweep(config, list(overrides), output_dir=folder, build=build, **options)
        except BaseException:
            if not any(folder.iterdir()):
                folder.rmdir()
            raise
