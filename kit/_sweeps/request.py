"""The sweep request: a grid or a search as asked for, by ``kit sweep`` or for a detached driver.

``kit sweep`` makes one from its command line and starts it here;
``kit submit`` makes the same one and hands it, pickled, to a detached
driver, which starts it here too: the driver never parses a command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kit._base.errors import KitError
from kit._trials.trial import PRUNED, Trial, TrialCallback, TrialPruned
from kit.result import RunResult

if TYPE_CHECKING:
    from kit._sweeps.sweep import SweepHandle


@dataclass(frozen=True)
class SweepRequest:
    """A grid sweep (``search`` None) or an Optuna search of one config.

    Parameters
    ----------
    config
        The config file (an absolute path: a driver starts in another folder).
    overrides
        Hydra's sweep grammar (``beam=1,3,5``) or, for a search, its space.
    output_dir
        The sweep's folder; None lets the sweep name one.
    concurrency
        Trials running at once, at most.
    metric, minimize
        The summary metric the best trial is chosen by (a search needs it).
    search, trials, prune
        ``"optuna"`` with its number of trials and pruner name, or None for a grid.

    Examples
    --------
    >>> SweepRequest("/tmp/c.yaml", ("beam=1,3",), None, 2).searching
    False
    >>> SweepRequest("/tmp/c.yaml", ("lr=interval(0.1,1)",), None, 2, search="optuna").check()
    Traceback (most recent call last):
    ...
    kit.KitError: --search optuna needs --trials N and --metric NAME ...
    """

    config: str
    overrides: tuple[str, ...]
    output_dir: Path | None
    concurrency: int
    metric: str | None = None
    minimize: bool = True
    search: str | None = None
    trials: int | None = None
    prune: str | None = None
    stop: str | None = None
    margin: float = 0.0

    @property
    def searching(self) -> bool:
        """Whether this is a search (else a grid)."""
        return self.search is not None

    def check(self) -> None:
        """Raise a KitError naming what is missing or does not belong to this kind of sweep."""
        if self.searching:
            if self.metric is None or self.trials is None:
                raise KitError(
                    "--search optuna needs --trials N and --metric NAME (the summary metric "
                    "to optimize), e.g. --trials 20 --metric wer"
                )
            if self.stop is not None and self.prune is not None:
                raise KitError(
                    "--stop decided and --prune are two rules for stopping a trial early: give one"
                )
            return
        for flag, given in (("--trials", self.trials), ("--prune", self.prune)):
            if given is not None:
                raise KitError(f"{flag} goes with --search optuna; a grid runs every trial")
        if self.stop is not None and self.metric is None:
            raise KitError(
                "--stop decided compares each trial with the first on a per-item metric: "
                "give --metric NAME (e.g. --metric wer)"
            )

    def submit(self, on_trial: TrialCallback | None = None) -> SweepHandle:
        """Start the sweep in this process; return its :class:`~kit._sweeps.sweep.SweepHandle`."""
        self.check()
        if self.searching:
            from kit._sweeps.search import pruner_named, submit_search
            from kit.store._study import require_optuna

            # Kit says what each trial did; Optuna's log lines would interleave with it.
            optuna = require_optuna()
            optuna.logging.set_verbosity(optuna.logging.WARNING)
            assert self.trials is not None and self.metric is not None  # check() said so
            return submit_search(
                self.config,
                self.overrides,
                trials=self.trials,
                metric=self.metric,
                direction="minimize" if self.minimize else "maximize",
                pruner=pruner_named(self.prune or "none"),
                output_dir=self.output_dir,
                concurrency=self.concurrency,
                on_trial=on_trial,
                stop=self.stop,
                margin=self.margin,
            )
        from kit._sweeps.sweep import submit_sweep

        return submit_sweep(
            self.config,
            self.overrides,
            output_dir=self.output_dir,
            concurrency=self.concurrency,
            on_trial=on_trial,
            metric=self.metric,
            minimize=self.minimize,
            stop=self.stop,
            margin=self.margin,
        )


def trial_line(trial: Trial, result: RunResult | None, error: BaseException | None) -> str:
    """Return the line that says how ``trial`` ended (``kit sweep`` prints one a trial)."""
    from kit._base.format import first_line, rounded

    where = " ".join(trial.overrides)
    if result is None:
        return f"{trial.name} {where}: error: {first_line(error)}"
    stats = result.stats
    summary = ", ".join(f"{k}={v}" for k, v in rounded(result.summary).items())
    status = PRUNED if isinstance(error, TrialPruned) else result.status
    why = f" ({error})" if isinstance(error, TrialPruned) else ""
    reused = f" ({stats.reused} reused)" if stats.reused else ""
    return (
        f"{trial.name} {where}: {status}{why}, {stats.ok} ok{reused}, {stats.failed} failed"
        f" in {stats.wall_seconds:.1f} s" + (f"; {summary}" if summary else "")
    )
