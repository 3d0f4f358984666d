"""report.html: the dashboard's plots, the config and the statistics, in one offline file."""

from __future__ import annotations

import dataclasses
import html
import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kit._base.atomic import atomic_file
from kit._base.files import UnsafeFileError, read_text
from kit.dashboard._figures import DashboardView, require_bokeh
from kit.dashboard._state import DashboardState
from kit.events import Event, RunFinished, RunStarted, read_events
from kit.store._rundir import RunDir, SweepDir
from kit.views._html import number

#: A part of ``report.html`` a runner adds: given the run's folder, its HTML (escaped by the
#: function, which is code of Kit's or the runner's, never read from the folder); "" for none.
Section = Callable[[Path], str]


def _stats_html(result: dict[str, Any]) -> str:
    stats = result.get("stats") or {}
    rows = []
    for key in ("items", "ok", "failed", "not_run", "resumed", "chunks"):
        if key in stats:
            rows.append((key, f"{stats[key]:,}"))
    for key in ("wall_seconds", "setup_seconds", "items_per_second"):
        if key in stats:
            rows.append((key.replace("_", " "), f"{stats[key]:,.2f}"))
    for name, worker in (stats.get("workers") or {}).items():
        rows.append(
            (f"worker {name}", f"{worker['items']:,} items, {worker['busy_seconds']:.2f} s busy")
        )
    for name, value in (result.get("summary") or {}).items():
        rows.append((f"summary: {name}", number(value)))
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    status = html.escape(str(result.get("status", "unknown")))
    return f"<h3>Statistics ({status})</h3><table class='kit-stats'>{body}</table>"


def _forecast_html(folder: Path) -> str:
    """Set ``kit check``'s forecast, when the folder holds one, against the run's wall time."""
    from kit.store._check_file import forecast_against_run

    against = forecast_against_run(folder)
    if against is None:
        return ""
    rows = [
        ("forecast", f"{against.median:.1f} s (80%: {against.low:.1f} to {against.high:.1f} s)"),
        ("slot-hours", f"{against.slot_hours:.3g} on {against.slots} slot(s)"),
    ]
    if not against.same:
        rows.append(("note", "the check was of another config or other items than this run"))
    elif against.actual is not None and against.error is not None:
        where = "inside" if against.inside else "outside"
        took = f"{against.actual:.1f} s: {against.error:+.0%}, {where} the interval"
        rows.append(("actual", took))
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    title = "<h3>Forecast (kit check) against the run</h3>"
    return f"{title}<table class='kit-forecast'>{body}</table>"


def _ran_html(folder: Path) -> str:
    """Say what this run took: its items (from the manifest) and where it is stored.

    The config below is the provider's, whose ``items`` and ``output_dir``
    may say more than ran (an Experiment app's check on a few items).
    """
    try:
        manifest = json.loads(read_text(RunDir(folder).manifest))
    except (OSError, ValueError, UnsafeFileError):
        return ""
    spec = manifest.get("indices") or {}
    count = manifest.get("n_items", "?")
    if "list" in spec:
        items = [str(i) for i in spec["list"]]
        shown = ", ".join(items[:20]) + (f", … ({len(items) - 20} more)" if len(items) > 20 else "")
    elif "range" in spec:
        start, stop, step = spec["range"]
        shown = f"range({start}, {stop}{f', {step}' if step != 1 else ''})"
    else:
        shown = ""
    rows = [("items run", f"{count:,}" if isinstance(count, int) else str(count))]
    if shown:
        rows.append(("which", shown))
    rows.append(("stored in", str(folder)))
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    return f"<h3>This run</h3><table class='kit-ran'>{body}</table>"


def write_report(
    output_dir: str | os.PathLike[str],
    shared_bokeh: str | None = None,
    sections: Sequence[Section] = (),
) -> Path:
    """Write ``output_dir/report.html`` from the run stored there; return its path.

    The file is standalone: BokehJS is inlined, nothing is fetched from a
    CDN, so it opens offline. ``kit report OUTPUT_DIR`` calls this. With
    ``shared_bokeh`` (a relative URL, ``../bokeh/``: a sweep's trials) the page
    loads BokehJS from there instead, and weighs some kilobytes, not megabytes.
    ``sections`` add the runner's own parts below the statistics
    (:meth:`kit.Runner.report_sections`: a decoding run's scores and alignments).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from kit.examples.toy import Env, Square
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> _ = Square(Env({}), output_dir=out).run(range(5))  # writes report.html at the end
    >>> write_report(out).name
    'report.html'
    """
    require_bokeh()
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models.widgets import Div
    from bokeh.resources import INLINE, Resources

    folder = Path(output_dir)
    files = RunDir(folder)
    if not files.manifest.exists():
        raise FileNotFoundError(f"{folder} holds no Kit run (no manifest.json)")
    state = DashboardState(max_points=2000)
    for event in read_events(files.events):
        state(event)
    title = f"Kit run {folder.name}"
    view = DashboardView(title)
    # The run is over: its cluster, and the Dask dashboard the live view linked to, may be gone.
    view.update(dataclasses.replace(state.snapshot(), dask_dashboard=None))
    result_path = files.result
    result = json.loads(read_text(result_path)) if result_path.exists() else {}
    config_path = files.config
    config = read_text(config_path) if config_path.exists() else "(no config stored)"
    details = Div(
        text=_stats_html(result)
        + _forecast_html(folder)
        + "".join(section(folder) for section in sections)
        + _ran_html(folder)
        + "<h3>Config</h3><pre class='kit-config' style='background:#f8f9fa;padding:8px'>"
        + html.escape(config)
        + "</pre>",
        sizing_mode="stretch_width",
        name="kit-details",
    )
    resources = INLINE if shared_bokeh is None else Resources(mode="server", root_url=shared_bokeh)
    page = file_html(column(view.layout, details), resources=resources, title=title)
    target = files.report
    with atomic_file(target) as fh:
        fh.write(page)
    return target


def share_bokeh(folder: Path) -> str | None:
    """Put BokehJS in ``folder/bokeh/`` (once); return the URL a page one level down uses.

    A sweep's trial reports load it from there rather than each carrying
    megabytes of it. None (each page inlines it) when bokeh is not installed
    or a link stands where it would go: nothing is written through a link.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> sweep = pathlib.Path(tempfile.mkdtemp())
    >>> share_bokeh(sweep), sorted(p.name for p in (sweep / "bokeh/static/js").iterdir())[0]
    ('../bokeh/', 'bokeh-gl.min.js')
    """
    try:
        from bokeh.resources import Resources
        from bokeh.util.paths import bokehjs_path
    except ImportError:
        return None
    target = folder / SweepDir.bokeh.name
    parts = [target, target / "static", target / "static" / "js"]
    if any(part.is_symlink() or (part.exists() and not part.is_dir()) for part in parts):
        return None
    parts[-1].mkdir(parents=True, exist_ok=True)
    for url in Resources(mode="server", root_url="").js_files:
        source = Path(bokehjs_path()) / url.split("?")[0].removeprefix("static/")
        copy = target / url.split("?")[0]
        if copy.is_symlink() or (copy.exists() and not copy.is_file()):
            return None  # nothing is written through, or renamed over, what stands there
        if copy.is_file() and copy.stat().st_size == source.stat().st_size:
            continue
        with atomic_file(copy) as fh:
            fh.write(source.read_text(encoding="utf-8"))
    return f"../{SweepDir.bokeh.name}/"


class ReportWriter:
    """An event subscriber that writes ``report.html`` when the run it saw start ends.

    Runners with an ``output_dir`` attach one, so the engine itself draws
    nothing. Without bokeh it does nothing (``kit report OUTPUT_DIR`` says
    what to install); a report that cannot be written is a warning, never a
    failed run: the records are stored already.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from kit.events import RunFinished, RunStarted
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> writer = ReportWriter(out)
    >>> writer(RunFinished("r", "error", 0, 0, 3, 0.1))  # never started: writes nothing
    >>> RunDir(out).report.exists()
    False
    """

    def __init__(
        self, output_dir: str | os.PathLike[str], sections: Sequence[Section] = ()
    ) -> None:
        self.output_dir = Path(output_dir)
        self.sections = tuple(sections)
        self._started = False

    def __call__(self, event: Event) -> None:
        """Write the report on ``RunFinished`` of a run that started."""
        if isinstance(event, RunStarted):
            self._started = True
        elif isinstance(event, RunFinished) and self._started:
            self._started = False
            if not RunDir(self.output_dir).manifest.is_file():
                return  # the folder went away mid-run: the run's error says so
            self.draw(self.output_dir, sections=self.sections)

    @staticmethod
    def draw(
        output_dir: Path, shared_bokeh: str | None = None, sections: Sequence[Section] = ()
    ) -> None:
        """Write ``output_dir``'s report; without bokeh nothing, and a failure is a warning."""
        try:
            write_report(output_dir, shared_bokeh, sections)
        except ImportError:
            pass
        except Exception as exc:
            warnings.warn(
                f"kit: report.html could not be written in {output_dir}: {exc}; "
                f"the run's results are stored; try `kit report {output_dir}`",
                RuntimeWarning,
                stacklevel=2,
            )
