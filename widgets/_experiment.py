"""Experiment: edit the config, run on a few items, compare runs, scale out — one cell."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as w
from omegaconf import DictConfig, OmegaConf

from kit import EnvironmentProvider, Runner, RunResult, load_config, to_overrides
from widgets._cluster_panel import ClusterPanel
from widgets._config_editor import ConfigEditor
from widgets._run_panel import RunPanel
from widgets._style import TABLE_STYLE


def history_table(rows: Sequence[dict[str, Any]]) -> str:
    """Return the run history as an HTML table (one column per stat and summary metric)."""
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
            text = f"{value:.4g}" if isinstance(value, float) else str(value)
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f"{TABLE_STYLE}<table class='kit-history kit-table'><tr>{head}</tr>{''.join(body)}</table>"
    )


class Experiment(w.VBox):  # type: ignore[misc]
    """The config editor, the cluster panel and the run panel together, with a run history.

    Change a knob, run on a few items, and compare: each run's row holds its
    config diff against the first run, its statistics and its summary
    metrics.

    Parameters
    ----------
    config
        The experiment config (a YAML path, dict or DictConfig).
    provider_cls, runner_cls
        Built as ``runner_cls(provider_cls(config), parallel=config.parallel,
        **config.runner)`` from the config being edited.
    indices
        All the items (the run panel checks the first N or a sample).
    config_path
        The file the config came from, for the scale-out command.

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
    >>> app = Experiment({"k": 1}, Env, Times, indices=range(10))
    >>> app.run_panel.how_many.value = 4
    >>> app.run_panel.run_button.click(); _ = app.run_panel.wait(timeout=30)
    >>> app.editor.fields["k"].value = 3
    >>> app.run_panel.run_button.click(); _ = app.run_panel.wait(timeout=30)
    >>> [(row["changes"], row["total"]) for row in app.history]
    [('(first run)', 6), ('k=3', 18)]
    """

    def __init__(
        self,
        config: Any,
        provider_cls: type[EnvironmentProvider],
        runner_cls: type[Runner],
        indices: Any,
        *,
        config_path: str = "config.yaml",
        scale_out: Sequence[str] = ("parallel.env=slurm",),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.provider_cls = provider_cls
        self.runner_cls = runner_cls
        self.base = load_config(config)
        self.editor = ConfigEditor(self.base)
        self.cluster = ClusterPanel(self.base.get("parallel") or {"env": "inline"})
        self.history: list[dict[str, Any]] = []
        self._first: DictConfig | None = None
        self._history = w.HTML(history_table([]))
        self.run_panel = RunPanel(
            self.make_runner(self.base),
            indices,
            base_config=self.base,
            config_path=config_path,
            scale_out=scale_out,
            on_result=self._record,
        )
        self.editor.observe(self._config_changed, names="value")
        sections = w.Accordion(children=[self.editor, self.cluster])
        sections.set_title(0, "config")
        sections.set_title(1, "cluster")
        sections.selected_index = 0
        self.children = [
            sections,
            self.run_panel,
            w.HTML("<b>runs</b>"),
            self._history,
        ]

    def make_runner(self, cfg: DictConfig) -> Runner:
        """Build the runner for ``cfg``, as ``kit run`` would."""
        options: dict[str, Any] = {}
        if "runner" in cfg:
            container = OmegaConf.to_container(cfg.runner, resolve=True)
            assert isinstance(container, dict)
            options = {str(k): v for k, v in container.items() if k != "_target_"}
        parallel = cfg.get("parallel") or {"env": "inline"}
        return self.runner_cls(self.provider_cls(cfg), parallel=parallel, **options)

    def _config_changed(self, change: Any) -> None:
        try:
            self.run_panel.runner = self.make_runner(change["new"])
            self.run_panel.error.value = ""
        except Exception as exc:  # shown in the panel; the previous runner stays
            self.run_panel._show_error(exc)

    def _record(self, result: RunResult) -> None:
        cfg = self.run_panel.runner.provider.config
        if self._first is None:
            self._first = cfg
            changes = "(first run)"
        else:
            changes = " ".join(to_overrides(self._first, cfg)) or "(same config)"
        stats = result.stats
        row: dict[str, Any] = {
            "run": len(self.history) + 1,
            "changes": changes,
            "items": stats.items,
            "ok": stats.ok,
            "failed": stats.failed,
            "seconds": round(stats.wall_seconds, 3),
            "items/s": round(stats.items_per_second, 1),
        }
        row.update(result.summary)
        self.history.append(row)
        self._history.value = history_table(self.history)
