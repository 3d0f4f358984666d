"""Which trackers a run exports to, as the ``tracking`` config section or a keyword says."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit.tracking._exporter import Exporter


def _sqlite_absolute(uri: str) -> str:
    """Return a SQLite URI with its relative path made absolute.

    Examples
    --------
    >>> _sqlite_absolute("http://127.0.0.1:5000")
    'http://127.0.0.1:5000'
    >>> _sqlite_absolute("sqlite:////data/mlflow.db")
    'sqlite:////data/mlflow.db'
    """
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri.startswith(prefix + "/"):
        return uri
    return prefix + str(Path(uri[len(prefix) :]).absolute())


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as a person types it here: relative to this folder when inside it."""
    absolute = Path(path).absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


@dataclass(frozen=True)
class Tracking:
    """Where a run (or a sweep) is exported to: TensorBoard, MLflow, both or neither.

    The ``tracking`` section of a config says the same (``tracking.mlflow=true``
    on the command line); both are off by default.

    Parameters
    ----------
    tensorboard
        A folder for TensorBoard logs, or True for ``tensorboard`` beside the
        run's folder (``runs/decode`` logs to ``runs/tensorboard/decode``).
    mlflow
        An MLflow tracking URI (``sqlite:///runs/mlflow.db``, a server's
        ``http://host:5000``), or True for ``mlflow.db`` beside the run's folder.
    experiment
        The MLflow experiment runs go in.
    records
        Also upload the stored records to MLflow as artifacts.
    overrides
        The overrides that made the run's config from its base (``kit run
        exp.yaml decoder.beam_size=5``): the MLflow run's ``kit.overrides`` tag.

    Examples
    --------
    >>> t = Tracking(tensorboard=True, mlflow=True)
    >>> t.tensorboard_dir(Path("runs/decode")), t.mlflow_uri(Path("/data/runs/decode"))
    (PosixPath('runs/tensorboard/decode'), 'sqlite:////data/runs/mlflow.db')
    >>> Tracking.of({"mlflow": "sqlite:////tmp/m.db"}).mlflow
    'sqlite:////tmp/m.db'
    >>> Tracking.of({}) is None  # nothing to export to
    True
    """

    tensorboard: str | bool | None = None
    mlflow: str | bool | None = None
    experiment: str = "kit"
    records: bool = False
    overrides: tuple[str, ...] = ()

    @classmethod
    def of(cls, value: Tracking | DictConfig | Mapping[str, Any] | None) -> Tracking | None:
        """Return a checked :class:`Tracking` from a config section or mapping (None: no export).

        Raises
        ------
        ConfigError
            For an unknown key or a value of the wrong kind, naming ``tracking.<key>``.
        ImportError
            For a tracker whose package is not installed (naming the extra).
        """
        if value is None or isinstance(value, Tracking):
            return value if value is None or value.enabled else None
        from kit.config._schema import TrackingConfig, check_section

        section = OmegaConf.create({"tracking": value})
        checked = check_section(section, "tracking", TrackingConfig)
        plain = OmegaConf.to_container(checked, resolve=True)
        assert isinstance(plain, dict)
        # Made absolute here, where the user is: a detached driver may start elsewhere.
        if isinstance(plain["tensorboard"], str):
            plain["tensorboard"] = str(Path(plain["tensorboard"]).expanduser().absolute())
        if isinstance(plain["mlflow"], str):
            plain["mlflow"] = _sqlite_absolute(plain["mlflow"])
        tracking = cls(**{str(k): v for k, v in plain.items()})
        tracking.require()
        return tracking if tracking.enabled else None

    def require(self) -> None:
        """Raise ImportError, naming the extra to install, for a tracker not installed."""
        from kit.tracking import _mlflow, _tensorboard

        if self.tensorboard:
            _tensorboard.require()
        if self.mlflow:
            _mlflow.require()

    @property
    def enabled(self) -> bool:
        """Whether anything is exported."""
        return bool(self.tensorboard) or bool(self.mlflow)

    def tensorboard_dir(self, folder: Path | None) -> Path | None:
        """Return the TensorBoard log folder of the run (or sweep) stored in ``folder``."""
        if not self.tensorboard:
            return None
        name = folder.name if folder is not None else time.strftime("run-%Y%m%d-%H%M%S")
        if self.tensorboard is True:
            root = (folder.parent if folder is not None else Path()) / "tensorboard"
        else:
            root = Path(str(self.tensorboard)).expanduser()
        return root / name

    def mlflow_uri(self, folder: Path | None) -> str | None:
        """Return the MLflow tracking URI for the run (or sweep) stored in ``folder``."""
        if not self.mlflow:
            return None
        if self.mlflow is True:
            parent = folder.parent if folder is not None else Path()
            return f"sqlite:///{(parent / 'mlflow.db').absolute()}"
        return _sqlite_absolute(str(self.mlflow))

    def exporters(
        self,
        output_dir: Path | None,
        config: DictConfig | None,
        *,
        resume: bool = True,
        sweep: Path | None = None,
        hparams: Mapping[str, Any] | None = None,
        parent: Callable[[], str | None] | None = None,
    ) -> list[Exporter]:
        """Return the exporters of one run stored in ``output_dir``.

        A sweep's trial (``sweep``: the sweep's folder) logs where the sweep
        does, as an HParams session of its ``hparams``, and nests under the
        MLflow run ``parent()`` names.
        """
        from kit.tracking._mlflow import MLflowExporter
        from kit.tracking._tensorboard import TensorBoardExporter

        placed = sweep if sweep is not None else output_dir
        out: list[Exporter] = []
        logdir = self.tensorboard_dir(placed)
        if logdir is not None:
            if sweep is not None and output_dir is not None:
                logdir = logdir / output_dir.name
            out.append(TensorBoardExporter(logdir, hparams=hparams))
        uri = self.mlflow_uri(placed)
        if uri is not None:
            named = f"{sweep.name}/{output_dir.name}" if sweep and output_dir else None
            tags = {"kit.overrides": " ".join(self.overrides)} if self.overrides else None
            out.append(
                MLflowExporter(
                    uri,
                    experiment=self.experiment,
                    output_dir=output_dir,
                    config=config,
                    run_name=named,
                    parent=parent,
                    tags=tags,
                    records=self.records,
                    resume=resume,
                )
            )
        return out

    def commands(self, folder: Path | None, *, sweep: bool = False) -> list[str]:
        """Return the commands that open the viewers on the run (or sweep) stored in ``folder``.

        Runs are compared in their common log folder; a sweep's HParams view
        is its own folder's (TensorBoard reads one HParams experiment per log
        folder, so at the common one it shows a single sweep's columns).

        Examples
        --------
        >>> Tracking(tensorboard=True).commands(Path("runs/decode"))
        ['tensorboard --logdir runs/tensorboard']
        >>> Tracking(tensorboard=True).commands(Path("runs/beams"), sweep=True)
        ['tensorboard --logdir runs/tensorboard/beams']
        """
        out = []
        logdir = self.tensorboard_dir(folder)
        if logdir is not None:
            out.append(f"tensorboard --logdir {shown(logdir if sweep else logdir.parent)}")
        uri = self.mlflow_uri(folder)
        if uri is not None:
            if uri.startswith("sqlite:///"):
                uri = "sqlite:///" + shown(uri[len("sqlite:///") :])
            out.append(f"mlflow ui --backend-store-uri {uri}")
        return out
