"""TensorBoard: a run's running values and summary as scalars, a sweep's trials in HParams.

Written with TensorBoard's own event-file writer and its HParams plugin's
summary functions (the ones Keras' callback writes with); TensorFlow is not
needed. A run's log folder holds one event file per time it ran (a resumed
run adds one, its steps going on from the items already done).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kit._base.extras import install
from kit.events import RunFinished, RunStarted
from kit.tracking._exporter import INTERVAL, Exporter, installed, numbers

EXTRA = install("tensorboard")


def require() -> None:
    """Raise ImportError, naming the extra to install, when tensorboard is not installed."""
    if not installed("tensorboard"):
        raise ImportError(
            f"writing TensorBoard logs needs the tensorboard package; install it with `{EXTRA}`"
        )


def _tensorboard() -> Any:
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        raise ImportError(
            f"writing TensorBoard logs needs the tensorboard package ({exc.name} is missing); "
            f"install it with `{EXTRA}`"
        ) from None
    return event_pb2, summary_pb2, EventFileWriter


def hparam_value(value: Any) -> bool | float | str:
    """Return what TensorBoard's HParams table can show of a config value.

    Examples
    --------
    >>> hparam_value(5), hparam_value("whisper"), hparam_value([1, 2]), hparam_value(None)
    (5, 'whisper', '[1, 2]', 'None')
    """
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class TensorBoardExporter(Exporter):
    """Write a run to a TensorBoard log folder, as it goes.

    Scalars, stepped by items done: ``items/done``, ``items/failed``,
    ``items/per_second`` and ``running/<metric>`` (each metric the runner's
    records carry, averaged over the items so far: a running WER, say);
    values the run logs itself under their own names; at the end the
    summary's numbers under their names (``wer``). With ``hparams`` (a
    sweep's trial: its swept values) the folder is also an HParams session,
    so TensorBoard's HParams table and parallel-coordinates view compare
    the trials of a sweep.

    Parameters
    ----------
    logdir
        The run's log folder (``tensorboard --logdir`` on it, or a parent).
    hparams
        The trial's hyperparameters, by name.
    interval
        Seconds between two writes of the running values.

    Examples
    --------
    >>> import tempfile
    >>> from kit.examples.toy import Env, Square
    >>> logdir = tempfile.mkdtemp()
    >>> _ = Square(Env({})).run(4, on_event=TensorBoardExporter(logdir))
    >>> from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    >>> tags = EventAccumulator(logdir).Reload().Tags()["scalars"]
    >>> sorted(tags)
    ['items/done', 'items/failed', 'items/per_second']
    """

    tracker = "TensorBoard"

    def __init__(
        self,
        logdir: str | Path,
        *,
        hparams: Mapping[str, Any] | None = None,
        interval: float = INTERVAL,
    ) -> None:
        super().__init__(interval=interval)
        self.logdir = Path(logdir)
        self.hparams = dict(hparams or {})
        self.fix = f"check that {self.logdir} can be written"
        require()  # a missing package is said at once, not by a warning mid-run
        self._writer: Any = None

    def open(self, started: RunStarted) -> None:
        """Open the event file; a trial's first event is its HParams session."""
        _, _, writer_class = _tensorboard()
        self.logdir.mkdir(parents=True, exist_ok=True)
        self._writer = writer_class(str(self.logdir), flush_secs=max(1, round(self.interval)))
        if self.hparams:
            from tensorboard.plugins.hparams import summary_v2

            values = {key: hparam_value(value) for key, value in self.hparams.items()}
            summary = summary_v2.hparams_pb(
                values, trial_id=self.logdir.name, start_time_secs=started.started or None
            )
            self._emit(summary, step=started.resumed)

    def write(self, values: dict[str, float], step: int) -> None:
        """Scalars at ``step``."""
        self._scalars(values, step)

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Write the run's own scalars at its step."""
        self._scalars(numbers(values), step)

    def close(self, finished: RunFinished, values: dict[str, float]) -> None:
        """Write the last running values and the summary's numbers; close the file."""
        self._scalars({**values, **numbers(finished.summary)}, finished.done)
        self._writer.close()
        self._writer = None

    def abandon(self) -> None:
        """Close the file after a failure."""
        if self._writer is not None:
            self._writer.close()

    def _scalars(self, values: Mapping[str, float], step: int) -> None:
        if not values:
            return
        _, summary_pb2, _ = _tensorboard()
        summary = summary_pb2.Summary(
            value=[
                summary_pb2.Summary.Value(tag=tag, simple_value=value)
                for tag, value in values.items()
            ]
        )
        self._emit(summary, step)

    def _emit(self, summary: Any, step: int) -> None:
        event_pb2, _, _ = _tensorboard()
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))


def write_experiment(
    logdir: str | Path, hparams: Mapping[str, list[Any]], metrics: list[str]
) -> Path:
    """Write a sweep's HParams experiment: its swept values and the metrics to compare by.

    ``logdir`` is the sweep's log folder, holding one folder per trial;
    ``hparams`` maps each swept key to the values its trials took.
    Returns the folder.
    """
    from tensorboard.plugins.hparams import summary_v2

    event_pb2, _, writer_class = _tensorboard()
    domains = [summary_v2.HParam(name, _domain(values)) for name, values in hparams.items()]
    summary = summary_v2.hparams_config_pb(
        hparams=domains, metrics=[summary_v2.Metric(name) for name in metrics]
    )
    folder = Path(logdir)
    folder.mkdir(parents=True, exist_ok=True)
    writer = writer_class(str(folder), filename_suffix=".experiment")
    writer.add_event(event_pb2.Event(wall_time=time.time(), step=0, summary=summary))
    writer.close()
    return folder


def _domain(values: list[Any]) -> Any:
    """Return the HParams domain of a swept key: its values, of one kind (None: mixed).

    Examples
    --------
    >>> _domain([1, 0.5, 1]).values, _domain(["b", "a"]).values, _domain([1, "a"])
    ([0.5, 1.0], ['a', 'b'], None)
    """
    from tensorboard.plugins.hparams import summary_v2

    shown = {hparam_value(v) for v in values}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in shown):
        shown = {float(v) for v in shown}  # TensorBoard's numbers are floats: 1 and 0.5 mix
    kinds = {type(v) for v in shown}
    return summary_v2.Discrete(sorted(shown)) if len(kinds) == 1 else None
