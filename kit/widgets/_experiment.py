"""Experiment: edit the config, run on a few items, compare runs, scale out — one cell."""

from __future__ import annotations

import html
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
from omegaconf import DictConfig

from kit import ConfigError, EnvironmentProvider, RunHandle, Runner, items_of, load_config
from kit.config import parallel_section
from kit.history import user_folder
from kit.tracking import Tracking
from kit.views import number, status_html
from kit.widgets._cluster_panel import ClusterPanel
from kit.widgets._config_editor import ConfigEditor
from kit.widgets._experiment_runs import ExperimentRuns
from kit.widgets._run_panel import RunPanel
from kit.widgets._style import TABLE_STYLE, scrolling
from kit.widgets._sweep_view import SweepBar, SweepView


def items_source(
    base: DictConfig, indices: Any, provider_cls: type[EnvironmentProvider] | None = None
) -> tuple[Any, str]:
    """Return the app's items and where they come from: ``indices``, or the config's ``items``.

    Config items without ``stop`` are the whole set of ``provider_cls`` built on ``base``;
    a set not readable yet (its data not there) is no item, said in the source.

    Raises
    ------
    ValueError
        When both give items, or neither does.
    """
    if "items" in base and indices is not None:
        raise ValueError(
            "the items are given twice: by indices= and by the config's items section; "
            "leave out indices= (the config's items are then used and follow its edits) "
            "or remove items from the config"
        )
    if indices is None and "items" not in base:
        raise ValueError(
            "no items: give indices= (e.g. indices=range(100)) or an items section "
            "in the config (e.g. items: {start: 0, stop: 100})"
        )
    if indices is not None:
        return indices, ""
    section = base.get("items") or {}
    counted = not section.get("file") and section.get("stop") is None
    provider = None if provider_cls is None or not counted else provider_cls(base)
    try:
        return items_of(base, provider), "config items"
    except (ConfigError, OSError) as exc:
        if provider is None:
            raise
        # The set is not there yet (its data is edited in the app): the app opens, and
        # its pool fills in once the config names data it can count.
        said = (str(exc).splitlines() or [type(exc).__name__])[0]
        return range(0), f"config items: the whole set, not readable yet: {said}"


def viewers_html(commands: Sequence[str]) -> str:
    """Return the commands that open the trackers' viewers, as the app shows them ("": none)."""
    if not commands:
        return ""
    lines = "".join(
        f"<div><code class='kit-viewer'>{html.escape(c)}</code></div>" for c in commands
    )
    return f"<div class='kit-viewers'><small>open the viewers with:</small>{lines}</div>"


def history_table(rows: Sequence[dict[str, Any]]) -> str:
    """Return the run history as an HTML table (one column per stat and summary metric).

    Examples
    --------
    >>> "no runs yet" in history_table([])
    True
    >>> table = history_table([{"run": "001", "status": "error", "error": "ConfigError: x"}])
    >>> "data-status='error'" in table and "kit-history" in table
    True
    """
    if not rows:
        return "<i>no runs yet</i>"
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c, "")
            text = status_html(str(value)) if c == "status" else html.escape(number(value))
            cells.append(f"<td>{text}</td>")
        status = html.escape(str(row.get("status", "")))
        other = "not the items of" in str(row.get("sample", ""))
        mark = " kit-other-items' style='color:#9c36b5" if other else ""
        body.append(f"<tr class='kit-run-row{mark}' data-status='{status}'>{''.join(cells)}</tr>")
    return TABLE_STYLE + scrolling(
        f"<table class='kit-history kit-table'><tr>{head}</tr>{''.join(body)}</table>"
    )


class Experiment(w.VBox):  # type: ignore[misc]
    """The config editor, the cluster panel and the run panel together, with a run history.

    Change a knob, run on a few items, and compare: each run's row holds its
    config diff against the first run, its status (a failed or cancelled run
    says so, with what ended it), its statistics and its summary metrics.
    Every run is stored in a numbered folder of ``runs_dir`` and the table
    is read back from there, so it survives a kernel restart and a
    colleague's notebook on the same folder shows the same runs. Runs use
    the cluster panel's cluster (:meth:`ClusterPanel.for_runs`).

    Parameters
    ----------
    config
        The experiment config (a YAML path, dict or DictConfig).
    provider_cls, runner_cls
        Built as ``runner_cls(provider_cls(config), parallel=..., **config.runner)``
        from the config being edited.
    indices
        All the items (the run panel checks the first N or a sample). Leave it
        out when the config has an ``items`` section (``{start, stop, step}``
        or ``{file}``, as ``kit run`` reads it): the items then follow that
        section as it is edited, so the config is the one place they are set.
    config_path
        The file the config came from, for the scale-out command.
    runs_dir
        Where the runs are stored; default ``runs/<user>/<notebook>/<runner class, lower
        case>`` (:func:`kit.history.user_folder`): pass a folder to share one history.

    The "track" box exports every run and sweep to TensorBoard and MLflow as
    it goes (as the config's ``tracking`` section says, else to
    ``runs_dir/tensorboard`` and ``runs_dir/mlflow.db``); the commands that
    open the two viewers show beside it. It starts ticked when the config
    has a ``tracking`` section.

    Examples
    --------
    >>> from kit import EnvironmentProvider, Runner
    >>> class Env(EnvironmentProvider):
    ...     def build_env_local(self): return {"k": self.config.k}
    ...     def make_worker_setup_fn(self): return lambda: {"k": 1}
    >>> class Times(Runner):
    ...     @staticmethod
    ...     def forward(idx, k):
    ...         return {"y": idx * k}
    ...     def summarize(self, records):
    ...         return {"total": sum(r["y"] for r in records)}
    >>> import tempfile
    >>> app = Experiment({"k": 1}, Env, Times, indices=range(10), runs_dir=tempfile.mkdtemp())
    >>> app.run_panel.how_many.value = 4
    >>> app.run_panel.run_button.click(); _ = app.run_panel.wait(timeout=30)
    >>> app.editor.fields["k"].value = 3
    >>> app.run_panel.run_button.click(); _ = app.run_panel.wait(timeout=30)
    >>> [(row["changes"], row["status"], row["total"]) for row in app.history]
    [('(first run)', 'completed', 6), ('k=3', 'completed', 18)]
    """

    def __init__(
        self,
        config: Any,
        provider_cls: type[EnvironmentProvider],
        runner_cls: type[Runner],
        indices: Any = None,
        *,
        config_path: str = "config.yaml",
        scale_out: Sequence[str] = ("parallel.env=slurm",),
        runs_dir: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.add_class("kit-experiment")  # for tests and a user's own CSS
        self.provider_cls = provider_cls
        self.runner_cls = runner_cls
        self.base = load_config(config)
        # By default a folder of this user's and notebook's own: attendees on one server
        # never number runs in, or read results from, one another's history.
        self.runs_dir = (
            Path(runs_dir) if runs_dir is not None else user_folder() / runner_cls.__name__.lower()
        )
        #: The app's model: its runs folder, its history, how a config becomes a runner.
        self.model = ExperimentRuns(self.base, provider_cls, runner_cls, self.runs_dir)
        self.editor = ConfigEditor(self.base, schemas=provider_cls.config_schemas)
        self.cluster = ClusterPanel(self.base.get("parallel") or {"env": "inline"})
        self._history = w.HTML(history_table(self.history))
        items, source = items_source(self.base, indices, provider_cls)
        self.track = w.Checkbox(
            value=Tracking.of(self.base.get("tracking")) is not None,
            description="track in TensorBoard and MLflow",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self.viewers = w.HTML()
        self.run_panel = RunPanel(
            self.make_runner(self.base),
            items,
            pool_source=source,
            base_config=self.base,
            config_path=config_path,
            scale_out=scale_out,
            on_end=self._record,
            output_dir_for=self._next_run_dir,
            parallel_for=self.cluster.for_runs,
            scale_out_dir=self.runs_dir,
            check=self._check_config,
        )
        self.editor.observe(self._config_changed, names="value")
        self.track.observe(lambda _: self._tracking_changed(), names="value")
        self._tracking_changed()
        #: The sweep field and button, and the latest sweep's view.
        self.sweep_bar = SweepBar(self.sweep)
        sections = w.Accordion(children=[self.editor, self.cluster])
        sections.set_title(0, "config")
        sections.set_title(1, "cluster")
        sections.selected_index = 0
        self.children = [
            sections,
            self.run_panel,
            w.HBox([self.track, self.viewers]),
            self.sweep_bar,
            w.HTML(f"<b>runs</b> <small>(stored in {html.escape(str(self.runs_dir))})</small>"),
            self._history,
        ]

    @property
    def history(self) -> list[dict[str, Any]]:
        """Every run stored in ``runs_dir`` (other notebooks' too), as the table shows them."""
        return self.model.history

    @property
    def runs(self) -> list[str]:
        """The runs this app started, oldest first (their folders' names in ``runs_dir``)."""
        return self.model.runs

    def make_runner(self, cfg: DictConfig) -> Runner:
        """Build the runner for ``cfg``, as ``kit run`` would (on the panel's cluster)."""
        return self.model.make_runner(cfg, self.cluster.for_runs(), self.tracking(cfg))

    def tracking(self, cfg: DictConfig | None = None) -> Tracking | None:
        """Where runs go as the "track" box and ``cfg`` (default: as edited) say; None: nowhere."""
        if not self.track.value:
            return None
        edited = self.editor.value if cfg is None else cfg
        return Tracking.of(edited.get("tracking")) or Tracking(tensorboard=True, mlflow=True)

    def _tracking_changed(self) -> None:
        tracking = self.tracking()
        commands = tracking.commands(self.runs_dir / "run") if tracking is not None else []
        self.viewers.value = viewers_html(commands)
        self.run_panel.runner = self.make_runner(self.editor.value)

    def __repr__(self) -> str:
        """Return one line on the experiment, for a static page (ipywidgets' nests every child)."""
        runs = len(self.history)
        return (
            f"<Kit experiment: {self.runner_cls.__name__} over {self.provider_cls.__name__},"
            f" {runs} run{'s' * (runs != 1)} in {self.runs_dir}; live in Jupyter>"
        )

    def refresh(self) -> None:
        """Read the history again from ``runs_dir`` (runs from other notebooks too)."""
        self.model.refresh()
        self._history.value = history_table(self.history)

    def _config_changed(self, change: Any) -> None:
        old, new = change["old"], change["new"]
        if old is not None and old.get("parallel") != new.get("parallel"):
            # An edit of parallel.n_workers is the cluster the next run starts, as shown.
            self.cluster.set_parallel(parallel_section(new.get("parallel") or {"env": "inline"}))
        try:
            runner = self.make_runner(change["new"])
            if "items" in self.base:
                self.run_panel.set_indices(items_of(change["new"], runner.provider))
            self.run_panel.runner = runner
            self.run_panel.error.value = ""
        except Exception as exc:  # shown in the panel; the previous runner stays
            self.run_panel._show_error(exc)

    def _check_config(self) -> None:
        problems = self.editor.problems
        if problems:
            listed = "\n".join(f"  {str(p).splitlines()[0]}" for p in problems)
            raise ConfigError(
                f"the config has {len(problems)} problem{'s' if len(problems) > 1 else ''}, "
                f"each shown next to its field above; fix them, then Run:\n{listed}"
            )

    def _next_run_dir(self) -> Path:
        return self.model.next_run_dir(self.editor.value, self.run_panel.sample.selection)

    def sweep(
        self,
        overrides: Sequence[str] | str,
        *,
        metric: str | None = None,
        minimize: bool = True,
        concurrency: int = 8,
    ) -> SweepView:
        """Run every trial of a grid over the config as edited, on the run panel's items.

        ``overrides`` are Hydra's sweep grammar (``decoder.beam_size=1,5``,
        ``range(...)``, ``choice(...)``; a list, or one string split as a
        shell would). The trials run side by side on the cluster panel's
        cluster, sharing its workers' envs; they are stored in
        ``runs_dir/sweep-NNN`` (a sweep folder: ``kit.attach`` reads it).
        The returned view (also shown under the app) holds the live table,
        ``.handle`` and ``.result()``.

        Examples
        --------
        >>> # view = app.sweep("decoder.beam_size=1,5 decoder.engine=whisper,pocketsphinx")
        >>> # view.result().to_pandas()
        """
        if isinstance(overrides, str):
            overrides = shlex.split(overrides)
        self._check_config()
        handle = self.model.submit_sweep(
            self.editor.value,
            overrides,
            self.make_runner,
            self.run_panel.selected(),
            concurrency=concurrency,
            metric=metric,
            minimize=minimize,
            tracking=self.tracking() or Tracking(),  # unticked: not even the config's
        )
        view = SweepView(handle, metric=metric)
        self.sweep_bar.show(view)
        return view

    def compare(self, runs: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Return the history rows of the runs this app started (or of ``runs``), to compare.

        The history below the app lists every run stored in ``runs_dir``
        (other notebooks' too); a comparison wants this experiment's own:
        changes are against the first of them, and a run on other items than
        that one says so in its ``sample``.

        Examples
        --------
        >>> # pd.DataFrame(app.compare())[["run", "changes", "sample", "wer"]]
        """
        return self.model.compare(runs)

    def _record(self, handle: RunHandle) -> None:
        session = handle.session
        if session is not None and session.client is not None:
            self.cluster.show(session)  # the cluster this run started is the panel's now
        self.model.record(handle, self.run_panel.runner.provider.config)
        self._history.value = history_table(self.history)
