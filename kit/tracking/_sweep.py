"""A sweep in the trackers: an MLflow parent run with a nested run per trial, a HParams experiment.

MLflow: the sweep is a parent run (its folder's ``tracking.json`` names it,
so a resumed sweep goes on in it) and each trial a run nested under it
(the ``mlflow.parentRunId`` tag, as Optuna's ``MLflowCallback`` nests its
trials), so MLflow's compare view and parallel-coordinates plot take the
trials. TensorBoard: each trial logs to its own folder of the sweep's log
folder, as a HParams session with its swept values; the sweep's end writes
the experiment (the swept keys, the summary metrics) beside them.
"""

from __future__ import annotations

import threading
import time
import warnings
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig

from kit._trials.compare import run_metric
from kit.tracking._exporter import Exporter, TrackingWarning, numbers, warn_stopped
from kit.tracking._spec import Tracking

if TYPE_CHECKING:
    from kit._trials.trial import SweepResult, Trial


def trial_hparams(trial: Trial) -> dict[str, Any]:
    """Return the trial's swept values, typed as Hydra reads its overrides (``5``, not ``"5"``).

    Examples
    --------
    >>> from kit._trials.trial import Trial
    >>> trial_hparams(Trial(0, ("beam=5", "engine=whisper", "lr=1e-3"), Path("t")))
    {'beam': 5, 'engine': 'whisper', 'lr': 0.001}
    """
    from kit.config._sweeps import _parse

    values: dict[str, Any] = {}
    for _, override in _parse(list(trial.overrides)):
        value = override.value()
        values[override.key_or_group] = (
            value if isinstance(value, (bool, int, float)) else str(value)
        )
    return values


class SweepTracker:
    """Export a sweep: started with it, asked for each trial's exporters, finished with it.

    Parameters
    ----------
    tracking
        Where to export.
    folder
        The sweep's folder.
    overrides
        The sweep's overrides (a tag of its parent run).
    config
        The sweep's base config (its parent run's params).
    resume
        Go on in the parent run the folder names.
    """

    def __init__(
        self,
        tracking: Tracking,
        folder: Path,
        overrides: list[str],
        config: DictConfig | None = None,
        *,
        resume: bool = True,
    ) -> None:
        self.tracking = tracking
        self.folder = folder
        self.overrides = overrides
        self.config = config
        self.resume = resume
        self.logdir = tracking.tensorboard_dir(folder)
        self.uri = tracking.mlflow_uri(folder)
        self._parent: Future[str | None] = Future()
        self._client: Any = None
        #: When the sweep began: its parent run's start, however long MLflow takes to import.
        self._began = time.time()

    def start(self, began: float | None = None) -> None:
        """Begin the sweep's parent run, on a thread of its own (MLflow may take seconds).

        ``began`` (seconds since the epoch) is when the sweep began; default now.
        """
        self._began = time.time() if began is None else began
        if self.uri is None:
            self._parent.set_result(None)
            return
        threading.Thread(target=self._open_parent, name="kit-mlflow-sweep", daemon=True).start()

    def _open_parent(self) -> None:
        from kit.tracking._mlflow import client_for, log_values, open_run

        assert self.uri is not None
        try:
            self._client = client_for(self.uri)
            run_id, new = open_run(
                self._client,
                self.uri,
                experiment=self.tracking.experiment,
                folder=self.folder,
                run_name=self.folder.name,
                tags={
                    "kit.sweep": " ".join(self.overrides),
                    "kit.output_dir": str(self.folder.absolute()),
                },
                resume=self.resume,
                start_time=self._began,
            )
            if new:
                log_values(self._client, run_id, {}, 0, self.shared_params())
        except Exception as exc:
            warn_stopped(
                "MLflow export of the sweep",
                exc,
                f"The sweep goes on and its folder is complete; check the MLflow store {self.uri}",
            )
            self._parent.set_result(None)
            return
        self._parent.set_result(run_id)

    def shared_params(self) -> dict[str, str]:
        """Return the parent run's params: the config every trial shares.

        The base config with the sweep's plain overrides applied; the keys it
        sweeps are left out (each trial's own run has them).
        """
        from kit.config import load_config
        from kit.config._sweeps import split_sweep
        from kit.tracking._mlflow import flat_params

        if self.config is None:
            return {}
        swept, fixed = split_sweep(self.overrides)
        params = flat_params(load_config(self.config, fixed) if fixed else self.config)
        return {
            key: value
            for key, value in params.items()
            if not any(key == k or key.startswith(f"{k}.") for k in swept)
        }

    def parent_id(self) -> str | None:
        """Return the parent run's id, once it exists (None if MLflow failed)."""
        return self._parent.result()

    def exporters(self, trial: Trial, config: Any) -> list[Exporter]:
        """Return the exporters of one trial, whose resolved config is ``config``."""
        tracking = replace(self.tracking, overrides=trial.overrides)
        if self.uri is not None and not self._parent_alive():
            tracking = replace(tracking, mlflow=None)  # the sweep's MLflow failed: said once
        return tracking.exporters(
            trial.output_dir,
            config if isinstance(config, DictConfig) else None,
            resume=self.resume,
            sweep=self.folder,
            hparams=trial_hparams(trial),
            parent=self.parent_id,
        )

    def _parent_alive(self) -> bool:
        return not self._parent.done() or self._parent.result() is not None

    def finish(
        self, result: SweepResult, cancelled: bool, metric: str | None, minimize: bool = True
    ) -> None:
        """Write the HParams experiment; end the parent run with the sweep's best and status.

        ``metric`` is the one the sweep judges its trials by (default: the
        first number of the trials' summaries).
        """
        ended = [r for r in result.results if r is not None]
        metrics = sorted({key for r in ended for key in numbers(r.summary)})
        if self.logdir is not None:
            # The sweep's own metric first (HParams shows the first ones); one the records
            # give, not the summaries, is the trials' running mean of it.
            judged = (
                [] if metric is None else [metric if metric in metrics else f"running/{metric}"]
            )
            shown = judged + [m for m in metrics if m not in judged]
            self._try("TensorBoard", self._write_experiment, result.trials, shown)
        if self.uri is not None and self.parent_id() is not None:
            best = metric or (metrics[0] if metrics else None)
            self._try("MLflow", self._end_parent, result, cancelled, best, minimize)

    def _write_experiment(self, trials: list[Trial], metrics: list[str]) -> None:
        from kit.tracking._tensorboard import write_experiment

        assert self.logdir is not None
        values: dict[str, list[Any]] = {}
        for trial in trials:  # all of them: those a resumed sweep read back too
            for key, value in trial_hparams(trial).items():
                values.setdefault(key, []).append(value)
        write_experiment(self.logdir, values, metrics)

    def _end_parent(
        self, result: SweepResult, cancelled: bool, metric: str | None, minimize: bool
    ) -> None:
        from kit.tracking._mlflow import log_values

        run_id = self.parent_id()
        assert run_id is not None
        from kit._trials.trial import TrialState
        from kit.result import RunStatus

        statuses = [TrialState.read(row["status"]) for row in result.rows()]
        done = TrialState(RunStatus.COMPLETED)
        completed = statuses.count(done)
        pruned = sum(status.pruned for status in statuses)
        values = {
            "trials/completed": float(completed),
            "trials/pruned": float(pruned),
            "trials/failed": float(len(statuses) - completed - pruned),
        }
        # The metric as the sweep judged it: a summary entry, else the records' mean.
        scored = (
            run_metric(r, metric)
            for r, status in zip(result.results, statuses, strict=True)
            if r is not None and status == done and metric is not None
        )
        known = [value for value in scored if value is not None]
        if known:
            values[f"best/{metric}"] = min(known) if minimize else max(known)
        log_values(self._client, run_id, values, 0)
        status = "KILLED" if cancelled else ("FAILED" if result.errors else "FINISHED")
        self._client.set_terminated(run_id, status=status)

    def _try(self, tracker: str, write: Any, *args: Any) -> None:
        try:
            write(*args)
        except Exception as exc:
            warnings.warn(
                f"kit: {tracker} export of the sweep's end failed: {type(exc).__name__}: {exc}. "
                f"The sweep's folder is complete; its trials were exported as they ended",
                TrackingWarning,
                stacklevel=1,
            )
