"""Experiment: edit the config, run on a few items, compare runs, scale out — one cell."""

from __future__ import annotations

import dataclasses
import html
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
from omegaconf import DictConfig, OmegaConf

from kit import (
    ConfigError,
    EnvironmentProvider,
    RunHandle,
    Runner,
    items_of,
    load_config,
)
from kit.config import parallel_section, to_overrides
from kit.history import (
    new_run_dir,
    read_history,
    record_experiment,
    record_unstarted,
    user_folder,
)
from kit.tracking import Tracking
from kit.views import number, status_html
from kit.widgets._cluster_panel import ClusterPanel
from kit.widgets._config_editor import ConfigEditor
from kit.widgets._run_panel import RunPanel
from kit.widgets._style import TABLE_STYLE, error_html, scrolling
from kit.widgets._sweep_view import SweepView

SWEEP_TIP = (
    "Run a trial per combination of the values in the field, side by side on the cluster, "
    "on the items the run panel would run"
)


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
        self.editor = ConfigEditor(self.base, schemas=provider_cls.config_schemas)
        self.cluster = ClusterPanel(self.base.get("parallel") or {"env": "inline"})
        self.history: list[dict[str, Any]] = read_history(self.runs_dir)
        self._history = w.HTML(history_table(self.history))
        self._run_dir: Path | None = None
        #: The runs this app started, oldest first (their folders' names in runs_dir).
        self.runs: list[str] = []
        from_config = "items" in self.base
        if from_config and indices is not None:
            raise ValueError(
                "the items are given twice: by indices= and by the config's items section; "
                "leave out indices= (the config's items are then used and follow its edits) "
                "or remove items from the config"
            )
        if indices is None and not from_config:
            raise ValueError(
                "no items: give indices= (e.g. indices=range(100)) or an items section "
                "in the config (e.g. items: {start: 0, stop: 100})"
            )
        self.track = w.Checkbox(
            value=Tracking.of(self.base.get("tracking")) is not None,
            description="track in TensorBoard and MLflow",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self.viewers = w.HTML()
        self.run_panel = RunPanel(
            self.make_runner(self.base),
            items_of(self.base) if from_config else indices,
            pool_source="config items" if from_config else "",
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
        self.sweep_overrides = w.Text(
            placeholder="e.g. decoder.beam_size=1,5 decoder.engine=whisper,pocketsphinx",
            description="sweep",
            layout=w.Layout(width="60%"),
        )
        self.sweep_button = w.Button(description="Sweep", icon="th", tooltip=SWEEP_TIP)
        self.sweep_button.on_click(lambda _: self._sweep_clicked())
        self.sweep_error = w.HTML()
        self.sweep_box = w.VBox()
        #: The sweeps this app started, oldest first (their views; ``.handle``, ``.result()``).
        self.sweeps: list[SweepView] = []
        sections = w.Accordion(children=[self.editor, self.cluster])
        sections.set_title(0, "config")
        sections.set_title(1, "cluster")
        sections.selected_index = 0
        self.children = [
            sections,
            self.run_panel,
            w.HBox([self.track, self.viewers]),
            w.HBox([self.sweep_overrides, self.sweep_button]),
            self.sweep_error,
            self.sweep_box,
            w.HTML(f"<b>runs</b> <small>(stored in {html.escape(str(self.runs_dir))})</small>"),
            self._history,
        ]

    def make_runner(self, cfg: DictConfig) -> Runner:
        """Build the runner for ``cfg``, as ``kit run`` would (on the panel's cluster)."""
        options: dict[str, Any] = {}
        if "runner" in cfg:
            container = OmegaConf.to_container(cfg.runner, resolve=True)
            assert isinstance(container, dict)
            options = {str(k): v for k, v in container.items() if k != "_target_"}
        tracking = self.tracking(cfg)
        if tracking is not None:
            made = tuple(to_overrides(self.base, cfg))
            tracking = dataclasses.replace(tracking, overrides=made)
        return self.runner_cls(
            self.provider_cls(cfg), parallel=self.cluster.for_runs(), tracking=tracking, **options
        )

    def tracking(self, cfg: DictConfig | None = None) -> Tracking | None:
        """Where runs go as the "track" box and ``cfg`` (default: as edited) say; None: nowhere."""
        if not self.track.value:
            return None
        edited = self.editor.value if cfg is None else cfg
        return Tracking.of(edited.get("tracking")) or Tracking(tensorboard=True, mlflow=True)

    def _tracking_changed(self) -> None:
        tracking = self.tracking()
        commands = tracking.commands(self.runs_dir / "run") if tracking is not None else []
        lines = "".join(
            f"<div><code class='kit-viewer'>{html.escape(c)}</code></div>" for c in commands
        )
        self.viewers.value = (
            f"<div class='kit-viewers'><small>open the viewers with:</small>{lines}</div>"
            if commands
            else ""
        )
        self.run_panel.runner = self.make_runner(self.editor.value)

    def __repr__(self) -> str:
        """Return one line on the experiment, for where the widget cannot be drawn.

        A static page (the manual) shows this; ipywidgets' own repr nests every child.
        """
        runs = len(self.history)
        return (
            f"<Kit experiment: {self.runner_cls.__name__} over {self.provider_cls.__name__},"
            f" {runs} run{'s' * (runs != 1)} in {self.runs_dir}; live in Jupyter>"
        )

    def refresh(self) -> None:
        """Read the history again from ``runs_dir`` (runs from other notebooks too)."""
        self.history = read_history(self.runs_dir)
        self._history.value = history_table(self.history)

    def _config_changed(self, change: Any) -> None:
        old, new = change["old"], change["new"]
        if old is not None and old.get("parallel") != new.get("parallel"):
            # An edit of parallel.n_workers is the cluster the next run starts, as shown.
            self.cluster.set_parallel(parallel_section(new.get("parallel") or {"env": "inline"}))
        try:
            runner = self.make_runner(change["new"])
            if "items" in self.base:
                self.run_panel.set_indices(items_of(change["new"]))
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
        self._run_dir = new_run_dir(self.runs_dir)
        self.runs.append(self._run_dir.name)
        record_experiment(self._run_dir, self.editor.value, self.run_panel.sample.selection)
        return self._run_dir

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
        from kit import submit_sweep

        if isinstance(overrides, str):
            overrides = shlex.split(overrides)
        self._check_config()
        items = self.run_panel.selected()

        def build(cfg: DictConfig) -> tuple[Runner, list[Any]]:
            return self.make_runner(cfg), items

        folder = new_run_dir(self.runs_dir, prefix="sweep-")
        try:
            handle = submit_sweep(
                self.editor.value,
                list(overrides),
                output_dir=folder,
                concurrency=concurrency,
                metric=metric,
                minimize=minimize,
                build=build,
                tracking=self.tracking() or Tracking(),  # unticked: not even the config's
            )
        except BaseException:
            if not any(folder.iterdir()):
                folder.rmdir()  # a sweep refused before it began leaves no folder behind
            raise
        view = SweepView(handle, metric=metric)
        self.sweeps.append(view)
        self.sweep_box.children = [view]
        return view

    def _sweep_clicked(self) -> None:
        self.sweep_error.value = ""
        try:
            self.sweep(self.sweep_overrides.value)
        except Exception as exc:  # shown under the field: a bad override, a config problem
            self.sweep_error.value = error_html(f"{type(exc).__name__}: {exc}")

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
        return read_history(self.runs_dir, list(runs) if runs is not None else self.runs)

    def _record(self, handle: RunHandle) -> None:
        session = handle.session
        if session is not None and session.client is not None:
            self.cluster.show(session)  # the cluster this run started is the panel's now
        if self._run_dir is not None:
            error = handle.exception()
            record_unstarted(
                self._run_dir,
                self.run_panel.runner.provider.config,
                str(handle.status),
                None if error is None else f"{type(error).__name__}: {error}",
                handle.progress.total,
            )
        self.refresh()
