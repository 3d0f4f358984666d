"""MLflow: a run becomes an MLflow run (params, stepped metrics, artifacts, status).

Every call goes through ``MlflowClient`` with an explicit tracking URI:
nothing sets MLflow's process-wide active run or URI, so two runs (a
sweep's trials) export side by side without stepping on each other. The
MLflow run's id is kept in the run's folder (``tracking.json``), so a
resumed run goes on in the MLflow run it began.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit._base.extras import install
from kit._base.files import read_json, write_json
from kit.events import RunFinished, RunStarted
from kit.store._rundir import RunDir
from kit.tracking._exporter import INTERVAL, REMOTE_FINISH_WAIT, Exporter, installed, numbers

EXTRA = install("mlflow")
#: MLflow's status for each final :class:`kit.RunStatus`.
STATUSES = {"completed": "FINISHED", "cancelled": "KILLED", "stopped": "FAILED", "error": "FAILED"}
#: What MLflow keeps of a param's value, at most (its own limit).
PARAM_CHARS = 6000
_KEY_CHARS = re.compile(r"[^0-9A-Za-z_\-. /]")
#: The experiment tag MLflow 3's UI reads to choose an experiment's first page, and Kit's kind.
EXPERIMENT_KIND, MODEL_RUNS = "mlflow.experimentKind", "custom_model_development"
_clients: dict[str, Any] = {}
#: Experiment ids by (tracking URI, name), looked up once a process.
_experiments: dict[tuple[str, str], str] = {}
_clients_lock = threading.Lock()


def require() -> None:
    """Raise ImportError, naming the extra to install, when mlflow is not installed."""
    if not installed("mlflow"):
        raise ImportError(
            f"exporting to MLflow needs the mlflow package; install it with `{EXTRA}`"
        )


def client_for(uri: str) -> Any:
    """Return the ``MlflowClient`` of ``uri``, one per process (its store's engine is shared).

    Raises
    ------
    ImportError
        Without mlflow, naming the extra to install.
    """
    require()
    from mlflow import MlflowClient

    with _clients_lock:
        # Made under the lock: a fresh SQLite store gets its tables once, not once a trial.
        if uri not in _clients:
            probe(uri)
            if uri.startswith("sqlite:///"):
                Path(uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
            client = MlflowClient(tracking_uri=uri)
            client.search_experiments(max_results=1)  # a store that cannot be opened fails here
            _clients[uri] = client
        return _clients[uri]


#: Seconds an MLflow server has to answer Kit's first question before it counts as down.
PROBE_SECONDS = 3.0


class TrackerUnreachable(ConnectionError):
    """An MLflow server did not answer: the run is not exported to it (its folder is whole).

    ``said`` is True when this process already warned about that server in
    the last :data:`SAID_FOR` seconds (a sweep's trials start side by side):
    the exporter then stops without a warning of its own.

    Examples
    --------
    >>> issubclass(TrackerUnreachable, ConnectionError)
    True
    """

    said = False


#: Seconds a server found down is not asked again, and not warned about again, by this process.
SAID_FOR = 30.0
#: When each server was found down, by URI (a fact this process learnt, kept briefly).
_down: dict[str, float] = {}


def probe(uri: str, seconds: float = PROBE_SECONDS) -> None:
    """Raise :class:`TrackerUnreachable` unless the MLflow server at ``uri`` answers at once.

    MLflow's own client retries a server that is down for about two minutes a
    call; asked first with a short timeout, a run finds out in seconds. A
    store that is no server (``sqlite:///...``) is not probed.

    Examples
    --------
    >>> probe("sqlite:////tmp/mlflow.db")
    >>> probe("http://127.0.0.1:9", seconds=1)  # nothing listens on the discard port
    Traceback (most recent call last):
    ...
    kit.tracking._mlflow.TrackerUnreachable: the MLflow server at http://127.0.0.1:9 did not ...
    """
    if not uri.startswith(("http://", "https://")):
        return
    import urllib.error
    import urllib.request

    found = _down.get(uri)
    if found is not None and time.monotonic() - found < SAID_FOR:
        known = TrackerUnreachable(f"the MLflow server at {uri} did not answer just before")
        known.said = True
        raise known
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=seconds) as answer:
            answer.read(64)
    except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts, a bad URL
        _down[uri] = time.monotonic()
        reason = getattr(exc, "reason", None) or exc
        raise TrackerUnreachable(
            f"the MLflow server at {uri} did not answer within {seconds:.0f} s ({reason})"
        ) from None
    _down.pop(uri, None)


def artifact_root(uri: str) -> str | None:
    """Where a new experiment of a SQLite store keeps artifacts: beside the database.

    Without it MLflow would put them in ``./mlruns`` of whatever folder the
    process runs in. Other stores (a server) choose for themselves.

    Examples
    --------
    >>> artifact_root("sqlite:////data/runs/mlflow.db")
    'file:///data/runs/mlartifacts'
    >>> artifact_root("http://127.0.0.1:5000") is None
    True
    """
    if not uri.startswith("sqlite:///"):
        return None
    database = Path(uri[len("sqlite:///") :])
    return (database.parent / "mlartifacts").absolute().as_uri()


def experiment_id(client: Any, name: str, uri: str) -> str:
    """Return the id of experiment ``name``, created if need be (by whoever gets there first)."""
    if (uri, name) not in _experiments:
        _experiments[uri, name] = _experiment_id(client, name, uri)
    return _experiments[uri, name]


def _experiment_id(client: Any, name: str, uri: str) -> str:
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        return str(found.experiment_id)
    try:
        # Kit's runs are model runs: MLflow 3's UI opens the experiment on Runs, not on
        # its GenAI pages (which it guesses for an experiment of no kind).
        return str(
            client.create_experiment(
                name, artifact_location=artifact_root(uri), tags={EXPERIMENT_KIND: MODEL_RUNS}
            )
        )
    except MlflowException:
        found = client.get_experiment_by_name(name)  # created meanwhile by another run
        if found is None:
            raise
        return str(found.experiment_id)


def flat_params(config: DictConfig | Mapping[str, Any] | None) -> dict[str, str]:
    """Return the resolved config as MLflow params: dotted keys, values as text.

    Examples
    --------
    >>> flat_params({"decoder": {"beam_size": 5, "engine": "whisper"}, "seeds": [1, 2]})
    {'decoder.beam_size': '5', 'decoder.engine': 'whisper', 'seeds': '[1, 2]'}
    """
    if config is None:
        return {}
    if isinstance(config, DictConfig):
        plain = OmegaConf.to_container(config, resolve=True)
    else:
        plain = dict(config)
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            out[_KEY_CHARS.sub("_", prefix)[:250]] = str(value)[:PARAM_CHARS]

    walk("", plain)
    return out


def open_run(
    client: Any,
    uri: str,
    *,
    experiment: str,
    folder: Path | None,
    run_name: str | None,
    tags: Mapping[str, str],
    resume: bool,
    start_time: float | None = None,
) -> tuple[str, bool]:
    """Return the MLflow run of ``folder`` (the one it began, or a new one) and if it is new.

    ``start_time`` (seconds since the epoch) is when the run began, not when
    its exporter got to it; a new run also gets MLflow's standard tags for
    who ran it and from what (``mlflow.user``, ``mlflow.source.name``).
    """
    from mlflow.exceptions import MlflowException

    noted = read_json(RunDir(folder).tracking) if folder is not None and resume else None
    known = (noted or {}).get("mlflow")
    if isinstance(known, dict) and known.get("run_id"):
        try:
            run = client.get_run(str(known["run_id"]))
        except MlflowException:
            run = None  # deleted from the store, or another store: begin a new one
        assert folder is not None
        if (
            run is not None
            and known.get("tracking_uri") != uri
            and run.data.tags.get("kit.output_dir") == str(folder.absolute())
            and run.info.status == "RUNNING"
        ):
            # The same store reached another way (its server is gone, its SQLite file is
            # read): the run begun there stopped halfway, and its artifacts live behind
            # the old server. Say so, and send the run again as a new MLflow run.
            client.set_tag(run.info.run_id, "kit.note", "stopped halfway: sent again")
            client.set_terminated(run.info.run_id, status="FAILED")
            run = None
        if (
            run is not None
            and known.get("tracking_uri") == uri
            and (run.info.lifecycle_stage == "active")
        ):
            client.update_run(run.info.run_id, status="RUNNING")
            return str(run.info.run_id), False
    run = client.create_run(
        experiment_id(client, experiment, uri),
        start_time=int(start_time * 1000) if start_time else None,
        run_name=run_name,
        tags={**source_tags(), **{key: value for key, value in tags.items() if value}},
    )
    run_id = str(run.info.run_id)
    if folder is not None:  # for a resumed run to go on in it
        write_json(RunDir(folder).tracking, {"mlflow": {"tracking_uri": uri, "run_id": run_id}})
    return run_id, True


def source_tags() -> dict[str, str]:
    """Return MLflow's standard tags for this process: its user, its program, of type LOCAL.

    Examples
    --------
    >>> sorted(source_tags())
    ['mlflow.source.name', 'mlflow.source.type', 'mlflow.user']
    """
    import getpass
    import sys

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this user id (a container)
        user = str(os.getuid())
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return {"mlflow.user": user, "mlflow.source.name": program, "mlflow.source.type": "LOCAL"}


def log_values(
    client: Any,
    run_id: str,
    values: Mapping[str, float],
    step: int,
    params: Mapping[str, str] | None = None,
    at: float | None = None,
) -> None:
    """Log ``values`` as metrics at ``step`` (and ``params``), in as few calls as MLflow takes.

    ``at`` (seconds since the epoch) is when the values were so; default now.
    """
    from mlflow.entities import Metric, Param

    stamp = int((time.time() if at is None else at) * 1000)
    metrics = [Metric(_KEY_CHARS.sub("_", k), v, stamp, step) for k, v in values.items()]
    pairs = [Param(key, value) for key, value in (params or {}).items()]
    # MLflow takes 1000 metrics and 100 params a call.
    for start in range(0, max(len(metrics), 10 * len(pairs), 1), 1000):
        first = start // 10
        client.log_batch(
            run_id, metrics=metrics[start : start + 1000], params=pairs[first : first + 100]
        )


class MLflowExporter(Exporter):
    """Write a run to MLflow, as it goes.

    The run becomes an MLflow run named after its folder: params are the
    resolved config flattened (``decoder.beam_size``), tags its folder and
    the overrides that made it; metrics are stepped by items done
    (``items/done``, ``items/failed``, ``items/per_second``,
    ``running/<metric>``), values the run logs itself, and at the end the
    summary's numbers under their names; artifacts are ``report.html`` and
    ``config.yaml`` (and the stored records with ``records=True``); its
    status is the run's (``FINISHED``, ``FAILED``, ``KILLED``). The MLflow
    run's id is kept in the run's folder: a resumed run goes on in it.

    Parameters
    ----------
    tracking_uri
        The MLflow store: ``sqlite:///runs/mlflow.db``, a server's
        ``http://host:5000``, any URI MLflow takes.
    experiment
        The MLflow experiment the run goes in (created if need be).
    output_dir
        The run's folder (for ``tracking.json`` and the artifacts).
    config
        The run's config, logged as params.
    run_name
        Default: the folder's name.
    parent
        The MLflow run id this one nests under (a sweep's), or a function
        returning it (called on the exporter's thread).
    tags
        More tags, e.g. ``{"kit.overrides": "decoder.beam_size=5"}``.
    records
        Also upload the stored records (``chunks/``) as artifacts.
    resume
        Go on in the MLflow run named in ``output_dir`` (False: always a new one).
    interval
        Seconds between two writes of the running values.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from kit.examples.toy import Env, Scored
    >>> runs = pathlib.Path(tempfile.mkdtemp())
    >>> store = f"sqlite:///{runs}/mlflow.db"
    >>> exporter = MLflowExporter(store, output_dir=runs / "squares", config={"lr": 0.1})
    >>> _ = Scored(Env({}), output_dir=runs / "squares").run(4, on_event=exporter)
    >>> run = client_for(store).get_run(exporter.run_id)
    >>> run.info.status, run.data.params, run.data.metrics["running/score"]
    ('FINISHED', {'lr': '0.1'}, 0.75)
    """

    tracker = "MLflow"

    def __init__(
        self,
        tracking_uri: str,
        *,
        experiment: str = "kit",
        output_dir: str | Path | None = None,
        config: DictConfig | Mapping[str, Any] | None = None,
        run_name: str | None = None,
        parent: str | Callable[[], str | None] | None = None,
        tags: Mapping[str, str] | None = None,
        records: bool = False,
        resume: bool = True,
        interval: float = INTERVAL,
    ) -> None:
        super().__init__(interval=interval)
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self._files = RunDir(self.output_dir) if self.output_dir is not None else None
        self.config = config
        self.run_name = run_name or (self.output_dir.name if self.output_dir else None)
        self.parent = parent
        self.tags = dict(tags or {})
        self.records = records
        self.resume = resume
        self.fix = f"check the MLflow store {tracking_uri}"
        if tracking_uri.startswith(("http://", "https://")):
            self.finish_wait = REMOTE_FINISH_WAIT
        if self.output_dir is not None:
            self.again = f"send it again with `kit export-tracking {self.output_dir}`"
        require()  # a missing package is said at once, not by a warning mid-run
        self.run_id: str | None = None
        self._started: float | None = None
        self._client: Any = None
        self._params: dict[str, str] = {}

    def open(self, started: RunStarted) -> None:
        """Begin (or go on in) the MLflow run; log the params."""
        self._client = client_for(self.tracking_uri)
        parent = self.parent() if callable(self.parent) else self.parent
        tags = {"kit.run_id": started.run_id, **self.tags}
        if self.output_dir is not None:
            tags["kit.output_dir"] = str(self.output_dir.absolute())
        if parent:
            tags["mlflow.parentRunId"] = parent
        self._started = started.started or None
        self.run_id, new = open_run(
            self._client,
            self.tracking_uri,
            experiment=self.experiment,
            folder=self.output_dir,
            run_name=self.run_name,
            tags=tags,
            resume=self.resume,
            start_time=self._started,
        )
        self._params = flat_params(self.config) if new else {}
        # Written before the run started: uploaded now, while the items run.
        if self._files is not None:
            self._upload(self._files.config)

    def write(self, values: dict[str, float], step: int) -> None:
        """Log the running values at ``step``."""
        self._log(values, step)

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Log the run's own values at its step."""
        self._log(numbers(values), step)

    def _log(self, values: dict[str, float], step: int) -> None:
        # The params go with the first values: one store transaction fewer a run.
        params, self._params = self._params, {}
        # Stamped when the run got there, not when the exporter did (MLflow's import alone
        # can take seconds on a busy machine, and points then landed after the run ended).
        at = self._started + self.elapsed if self._started else None
        log_values(self._client, self._require_run(), values, step, params, at=at)

    def close(self, finished: RunFinished, values: dict[str, float]) -> None:
        """Log the last values, the summary and the artifacts; end the run with its status."""
        run_id = self._require_run()
        self._log({**values, **numbers(finished.summary)}, finished.done)
        if finished.error:
            self._client.set_tag(run_id, "kit.error", finished.error[:5000])
        # The run's own end (its start and elapsed time), not when the exporter got there.
        ended = self._started + finished.elapsed if self._started else None
        self._client.set_terminated(
            run_id,
            status=STATUSES.get(str(finished.status), "FAILED"),
            end_time=int(ended * 1000) if ended else None,
        )

    def upload(self, finished: RunFinished) -> None:
        """Upload ``report.html`` (and the records with ``records=True``)."""
        if self._files is None:
            return
        self._upload(self._files.report)
        chunks = self._files.chunks
        if self.records and chunks.is_dir() and not chunks.is_symlink():
            self._client.log_artifacts(self._require_run(), str(chunks), "records")

    def _upload(self, path: Path) -> None:
        """Upload the run folder's file at ``path`` if it is there (a regular file, not a link)."""
        if path.is_file() and not path.is_symlink():
            self._client.log_artifact(self._require_run(), str(path))

    def abandon(self) -> None:
        """Mark the MLflow run failed, if it was begun and the store still answers."""
        if self.run_id is not None and self._client is not None:
            self._client.set_terminated(self.run_id, status="FAILED")

    def _require_run(self) -> str:
        assert self.run_id is not None, "the run's RunStarted comes first"
        return self.run_id
