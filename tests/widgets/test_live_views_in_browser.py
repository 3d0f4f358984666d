"""Live views in JupyterLab 4 and Notebook 7: right every time, with no error shown.

The dashboard of each run started with the Run button ends on its final
picture (every metric drawn to the last item), a reloaded page shows the
finished run, and no traceback reaches JupyterLab's log console, the
browser's console or the kernel's stderr on the way.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jupyter import (
    ROOT,
    Jupyter,
    Shots,
    log_console_entries,
    notebook,
    open_and_run_all,
    save,
    wait_until_quiet,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_idle_clusters")]

ITEMS = 20
APP = (
    "from kit import widgets\n"
    "from tests.workloads import Scored, ToyProvider, toy_config\n"
    "app = widgets.Experiment(\n"
    "    toy_config(sleep=0.01, parallel={{'env': 'local', 'n_workers': 2}}),\n"
    "    ToyProvider, Scored,\n"
    "    indices=range(100), runs_dir={runs_dir!r}, config_path='exp.yaml',\n"
    ")\n"
    f"app.run_panel.how_many.value = {ITEMS}\n"
    "app"
)
#: The last point of each metric's line in the newest dashboard on the page (BokehJS's own models).
METRIC_ENDS = """() => {
    // The newest dashboard: the page also holds bokeh documents that are none (empty ones).
    const isDashboard = (d) => d.roots().some((r) => r.name === "kit-dashboard");
    const dashboards = Bokeh.documents.filter(isDashboard);
    const doc = dashboards[dashboards.length - 1];
    const ends = {};
    if (doc === undefined) return ends;
    for (const model of doc.all_models) {
        const name = model.name || "";
        if (name.startsWith("kit-metric-points-")) {
            const xs = model.data.x;
            ends[name.slice("kit-metric-points-".length)] = xs.length ? xs[xs.length - 1] : null;
        }
    }
    return ends;
}"""

#: The texts of the newest dashboard's models (its header, the plots' titles...).
TEXTS = """() => {
    const isDashboard = (d) => d.roots().some((r) => r.name === "kit-dashboard");
    const dashboards = Bokeh.documents.filter(isDashboard);
    const doc = dashboards[dashboards.length - 1];
    if (doc === undefined) return [];
    return [...doc.all_models].map((m) => m.text).filter((t) => typeof t === "string");
}"""

#: What each bokeh document on the page holds: its roots, header, and metric line ends.
DOCUMENTS = """() => Bokeh.documents.map((doc) => {
    const out = {roots: doc.roots().map((r) => r.name), models: doc.all_models.size, metrics: {}};
    for (const model of doc.all_models) {
        const name = model.name || "";
        if (name.startsWith("kit-metric-points-")) {
            out.metrics[name.slice(18)] = model.data.x.length;
        } else if (typeof model.text === "string" && model.text.includes("kit-header")) {
            out.header = model.text.replace(/<[^>]*>/g, "");
        }
    }
    return out;
})"""


@pytest.fixture
def jupyter(serve: Callable[..., Jupyter], ui: str) -> Jupyter:
    """The session's server of the test's ``ui`` ("lab" or "notebook")."""
    return serve(ui)


#: Errors a page shows with no notebook open, Kit or not: Notebook 7's file browser
#: (/tree, no user settings, no kernel) raises this one as it loads its settings.
NOT_KITS = {"Cannot read properties of undefined (reading 'schema')"}


@pytest.fixture
def console() -> list[str]:
    """The errors the page wrote to the browser's console, and its uncaught exceptions.

    Those in ``NOT_KITS`` are left out: they come with the UI, without Kit.
    """
    return []


@pytest.fixture
def page(chromium: Any, jupyter: Jupyter, console: list[str]) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1300, "height": 1100})
    try:
        opened = context.new_page()
        opened.on("console", lambda m: m.type == "error" and keep(console, m.text))
        opened.on("pageerror", lambda error: keep(console, str(error)))
        yield opened
    finally:
        context.close()
        jupyter.shut_down_kernels()


def run_cell(page: Any, jupyter: Jupyter, tmp_path: Path, name: str, code: str) -> Shots:
    """Open a notebook of one cell, ``code``, and run it; return where its screenshots go."""
    open_and_run_all(page, jupyter, jupyter.write(name, [code]))
    return Shots(tmp_path / "screenshots")


def nothing_said(page: Any, ui: str, console: list[str]) -> None:
    """Assert that no error reached JupyterLab's log console or the browser's console."""
    assert log_console_entries(page, ui) == []
    assert console == [], console[:3]


def keep(console: list[str], error: str) -> None:
    if error not in NOT_KITS:
        console.append(error)


def kernel_stderr_tracebacks(log: Path, since: int) -> list[str]:
    """Lines of the server's log (where kernels' stderr goes) written since byte ``since``."""
    with log.open("rb") as fh:
        fh.seek(since)
        text = fh.read().decode(errors="replace")
    return [line for line in text.splitlines() if "Traceback" in line or "Error" in line]


def wait_for_metric_ends(page: Any, want: dict[str, int]) -> dict[str, Any]:
    """Wait until the newest dashboard's metric lines end at ``want``; return where they end.

    The header and each line are patched one after the other: "completed" can be on
    the page a moment before the last points are.
    """
    with contextlib.suppress(Exception):  # the assertion after says where they ended
        page.wait_for_function(
            f"want => {{ const ends = ({METRIC_ENDS})();"
            " return Object.keys(want).every(k => ends[k] === want[k])"
            " && Object.keys(ends).length === Object.keys(want).length; }",
            arg=want,
            timeout=30_000,
        )
    ends: dict[str, Any] = page.evaluate(METRIC_ENDS)
    return ends


def save_and_reload(page: Any, notebook: Path) -> None:
    """Save the notebook (Ctrl+S) as a person would, wait until it is on disk, reload."""
    save(page, notebook)
    page.reload()


@pytest.mark.parametrize(
    ("ui", "runs", "view_wait"),
    [
        ("lab", 10, None),
        # Redraws going out before the page has rendered the view, as on a busy machine.
        ("lab", 3, 0.0),
        ("notebook", 3, None),
    ],
)
def test_button_runs_each_end_completed_with_every_metric_drawn_and_no_traceback(
    jupyter: Jupyter,
    page: Any,
    console: list[str],
    tmp_path: Path,
    ui: str,
    runs: int,
    view_wait: float | None,
) -> None:
    shots = Shots(tmp_path / "screenshots")
    server_log = jupyter.folder.parent / f"{ui}.log"
    log_start = server_log.stat().st_size  # this test's lines only: the server is the session's
    cells = [APP.format(runs_dir=f"runs/live-{runs}-{view_wait}")]  # each test's own history
    if view_wait is not None:
        cells.insert(
            0,
            "from kit.widgets._dashboard import DashboardWidget\n"
            f"DashboardWidget.view_wait = {view_wait}",
        )
    name = jupyter.write(f"live-{runs}-{view_wait}.ipynb", cells)
    open_and_run_all(page, jupyter, name)
    run = page.locator("button.widget-button", has_text=re.compile(r"^\s*Run\s*$")).first
    run.wait_for(timeout=90_000)
    rows = page.locator(".kit-history tr.kit-run-row[data-status='completed']")
    for number in range(1, runs + 1):
        page.wait_for_function("b => !b.disabled", arg=run.element_handle(), timeout=60_000)
        run.click()
        # The history gets its row when the run has ended and the panel has drawn its end.
        page.wait_for_function(
            "n => document.querySelectorAll("
            "\".kit-history tr.kit-run-row[data-status='completed']\").length >= n",
            arg=number,
            timeout=120_000,
        )
        # The dashboard of this run (each run gets a new one), in BokehJS's shadow DOM.
        header = page.locator(".kit-header").last
        final = re.compile(rf"completed · {ITEMS}/{ITEMS} items")
        try:
            page.locator(".kit-header", has_text=final).last.wait_for(timeout=60_000)
        except Exception as exc:  # playwright's TimeoutError: leave what the page shows
            with contextlib.suppress(Exception):  # the picture helps; the message says it all
                shots(page, f"run-{number}-never-completed", focus=header)
            headers = page.locator(".kit-header").all_text_contents()
            raise AssertionError(
                f"run {number} ended (its history row is there) but no dashboard says "
                f"completed: headers {headers}, documents {page.evaluate(DOCUMENTS)}"
            ) from exc
        ends = wait_for_metric_ends(page, {"wer": ITEMS, "rtf": ITEMS})
        if ends != {"wer": ITEMS, "rtf": ITEMS}:
            shots(page, f"run-{number}-metrics-missing", focus=header)
            assert ends == {"wer": ITEMS, "rtf": ITEMS}, (number, ends, page.evaluate(DOCUMENTS))
        text = header.text_content() or ""
        if "running" in text:
            shots(page, f"run-{number}-still-running", focus=header)
            headers = page.locator(".kit-header").all_text_contents()
            assert "running" not in text, (number, headers, page.evaluate(DOCUMENTS))
    assert rows.count() == runs
    shots(page, "tenth-run")
    page.locator(".jp-WindowedPanel-outer").first.evaluate("e => e.scrollBy(0, 600)")
    shots(page, "tenth-run-metrics")
    entries = log_console_entries(page, ui)
    shots(page, "log-console")
    assert entries == [], entries[:3]
    assert console == [], console[:3]
    assert kernel_stderr_tracebacks(server_log, since=log_start) == []

    if view_wait is not None:
        return
    # A reloaded page (the notebook saved, the kernel live) shows the finished run.
    trail = record_messages(page)
    save_and_reload(page, jupyter.folder / name)
    # While the page restores the widgets, a view may be drawn and replaced: read the one shown.
    shown = page.locator(".kit-header:visible", has_text="completed").first
    try:
        shown.wait_for(timeout=90_000)
    except Exception as exc:
        shots(page, "reloaded-not-completed")
        headers = page.locator(".kit-header").all_text_contents()
        outputs = page.locator(".jp-OutputArea-output").all_text_contents()
        raise AssertionError(
            f"the reloaded page shows no completed dashboard: headers {headers}, "
            f"outputs {[o[:200] for o in outputs]}, console {console[:3]}, "
            f"documents {page.evaluate(DOCUMENTS)}, what the page said and heard since "
            f"the reload: {trail}"
        ) from exc
    header = shown.text_content() or ""
    assert f"{ITEMS}/{ITEMS}" in header, header
    assert wait_for_metric_ends(page, {"wer": ITEMS, "rtf": ITEMS}) == {"wer": ITEMS, "rtf": ITEMS}
    shots(page, "reloaded", focus=shown)
    assert console == [], console[:3]


#: What names a kernel message in a websocket frame: its type, a widget message's method.
MESSAGE_NAMES = re.compile(r'"(?:msg_type|method|execution_state)": ?"([^"]*)"')


def record_messages(page: Any) -> list[str]:
    """From now on, note each console line and each kernel message of ``page``, with its time.

    A page that restores its widgets wrong shows nothing wrong but what it
    asked and when answers came (a widget's state, say, after 4 s).
    """
    trail: list[str] = []
    start = time.monotonic()

    def note(kind: str, text: str | bytes) -> None:
        decoded = text if isinstance(text, str) else text.decode(errors="replace")
        names = MESSAGE_NAMES.findall(decoded[:4000])[:3] if kind != "console" else decoded[:120]
        trail.append(f"{time.monotonic() - start:.2f}s {kind} {len(text)}B {names}")

    page.on("console", lambda message: note("console", f"{message.type}: {message.text}"))
    page.on(
        "websocket",
        lambda ws: (
            ws.on("framesent", lambda frame: note("sent", frame)),
            ws.on("framereceived", lambda frame: note("heard", frame)),
        ),
    )
    return trail


def run_from(page: Any, cell: Any) -> None:
    """Select ``cell`` and click Run → Run Selected Cell and All Below."""
    cell.locator(".jp-InputPrompt").first.click()
    page.get_by_text("Run", exact=True).first.click()
    page.get_by_text("Run Selected Cell and All Below", exact=True).click()


@pytest.mark.parametrize(
    ("ui", "mode"), [("lab", "attendee"), ("lab", "teacher"), ("notebook", "attendee")]
)
def test_the_workshop_dashboard_shows_the_run_it_follows(
    jupyter: Jupyter, page: Any, console: list[str], tmp_path: Path, ui: str, mode: str
) -> None:
    """Workshop 04's "watch the metric live" cell: a full progress bar and the metric's line."""
    import nbformat

    book = nbformat.read(ROOT / "notebooks" / "04_workshop.ipynb", as_version=4)
    cells = [c.source for c in book.cells if c.cell_type == "code"]
    if mode == "teacher":  # as `KIT_WORKSHOP_SOLUTIONS=1 make lab` would
        cells.insert(0, "import os\nos.environ['KIT_WORKSHOP_SOLUTIONS'] = '1'")
    name = f"workshop-{mode}.ipynb"
    (jupyter.folder / name).write_text(nbformat.writes(nbformat.from_dict(notebook(cells))))
    shots = Shots(tmp_path / "screenshots")
    open_and_run_all(page, jupyter, name)
    if mode == "attendee":
        # Run All stops at each exercise left blank; the attendee runs its solution and goes on.
        for number in (1, 2, 3):
            stopped = page.locator(".jp-CodeCell", has_text=f"%%exercise {number}").first
            stopped.locator(".jp-OutputArea-output", has_text="ExerciseNotDone").wait_for(
                timeout=90_000
            )
            run_from(page, page.locator(".jp-CodeCell", has_text=f"%%solution {number}").first)
    header = page.locator(".kit-header", has_text="completed · 600/600 items").first
    header.wait_for(timeout=120_000)
    shots(page, f"{mode}-dashboard", focus=header)
    ends = wait_for_metric_ends(page, {"known_share": 600})
    assert ends == {"known_share": 600}, ends
    # One name, one number per label: the plot's line is the header's mean over items.
    metrics = header.locator(".kit-metrics").text_content() or ""
    assert "mean over items: known_share = 0.5556" in metrics, metrics
    assert "summary: known_share = 0.6667" in metrics, metrics
    titles = page.evaluate(TEXTS)
    assert "known_share: mean over items = 0.5556" in titles, titles
    dashboard_cell = page.locator(".jp-CodeCell", has_text="widgets.show_dashboard(handle)")
    assert "Dashboard at 0x" not in (dashboard_cell.first.text_content() or "")
    nothing_said(page, ui, console)
    # Saved once every cell has run, as a person saves a notebook they ran through: under
    # load the cells the last Run Below queued were still running at the save, and the
    # page the test reloaded had changed since. Saved, it stays small: BokehJS comes from
    # the server, not in each widget's output.
    wait_until_quiet(jupyter, name)
    saved = jupyter.folder / name
    save(page, saved)
    assert saved.stat().st_size < 200_000, saved.stat().st_size
    # Reopened on a fresh kernel, the dashboard is the last picture, not "model not found".
    jupyter.shut_down_kernels()
    page.reload()
    last = page.locator(".kit-header", has_text="completed · 600/600 items").first
    last.wait_for(timeout=60_000)
    shots(page, f"{mode}-reopened", focus=last)
    assert "model not found" not in (page.locator("body").text_content() or "")


DETACHED = (
    "import kit\n"
    "from kit import widgets\n"
    "from tests.workloads import Scored, ToyProvider, toy_config\n"
    "runner = Scored(ToyProvider(toy_config(sleep=0.05)), output_dir='runs/detached')\n"
    f"runner.submit(range({ITEMS}), detached=True)\n"
    "widgets.show_dashboard(kit.attach('runs/detached'))"
)


@pytest.mark.parametrize("ui", ["lab"])
def test_a_detached_runs_dashboard_ends_on_the_whole_run(
    jupyter: Jupyter, page: Any, console: list[str], tmp_path: Path, ui: str
) -> None:
    """A run driven by another process, shown from its directory, ends like the others."""
    shots = run_cell(page, jupyter, tmp_path, "detached.ipynb", DETACHED)
    header = page.locator(".kit-header", has_text=f"completed · {ITEMS}/{ITEMS} items").first
    header.wait_for(timeout=120_000)
    ends = wait_for_metric_ends(page, {"wer": ITEMS, "rtf": ITEMS})
    shots(page, "detached-dashboard", focus=header)
    assert ends == {"wer": ITEMS, "rtf": ITEMS}, ends
    nothing_said(page, ui, console)


DECIDED = (
    "import kit\n"
    "from kit import widgets\n"
    "config = {\n"
    "    'provider': {'_target_': 'tests.workloads.KeyedProvider'},\n"
    "    'runner': {'_target_': 'tests.workloads.Errs', 'chunk_size': 10},\n"
    "    'items': {'start': 0, 'stop': 300}, 'factor': 1, 'log_dir': '.', 'gain': 0.0,\n"
    "    'noise': 0, 'sleep': 0.006, 'parallel': {'env': 'inline'},\n"
    "}\n"
    "handle = kit.submit_sweep(config, ['gain=0.0,0.1'], output_dir='runs/decided',\n"
    "                          metric='err', stop='decided', concurrency=1)\n"
    "widgets.SweepView(handle, metric='err')"
)


@pytest.mark.parametrize("ui", ["lab"])
def test_a_decided_sweep_says_in_its_table_what_was_decided_and_what_it_saved(
    jupyter: Jupyter, page: Any, console: list[str], tmp_path: Path, ui: str
) -> None:
    """A sweep with ``stop='decided'``: the trial decided better reads pruned, with its note."""
    shots = run_cell(page, jupyter, tmp_path, "decided.ipynb", DECIDED)
    sweep = page.locator(".kit-sweep").first
    sweep.locator(".kit-trial-row[data-status='pruned']").wait_for(timeout=120_000)
    sweep.get_by_text("completed · 2/2 trials done").wait_for(timeout=120_000)
    sweep.locator(".bk-Canvas, canvas").first.wait_for(timeout=60_000)  # the plots
    # The decided trial is drawn too, marked as over the items it ran.
    sweep.get_by_text("Dashed lines, hollow points: trials stopped early").wait_for()
    shots(page, "decided-sweep", focus=sweep)
    note = sweep.locator(".kit-trial-note").first.text_content() or ""
    assert note.startswith("trial-001: gain=0.1: err lower by "), note
    assert "than trial-000, decided at " in note and "% of its items saved" in note, note
    nothing_said(page, ui, console)


REUSED = (
    "import kit\n"
    "from kit import widgets\n"
    "config = {\n"
    "    'provider': {'_target_': 'tests.reuse.workload.Numbers'},\n"
    "    'runner': {'_target_': 'tests.reuse.workload.Decode', 'chunk_size': 20},\n"
    "    'items': {'start': 0, 'stop': 200}, 'decoder': {'beam': 1},\n"
    "    'scoring': {'normalizer': 'plain', 'metric': 'wer'}, 'parallel': {'env': 'inline'},\n"
    "}\n"
    "handle = kit.submit_sweep(config, ['decoder.beam=1,2', 'scoring.normalizer=plain,upper'],\n"
    "                          output_dir='runs/reused', concurrency=2)\n"
    "widgets.SweepView(handle)"
)


@pytest.mark.parametrize("ui", ["lab"])
def test_a_sweep_over_scorings_shows_which_trials_reused_their_items(
    jupyter: Jupyter, page: Any, console: list[str], tmp_path: Path, ui: str
) -> None:
    """Trials alike in decoder.* but for their normaliser take each other's outputs: said."""
    shots = run_cell(page, jupyter, tmp_path, "reused.ipynb", REUSED)
    sweep = page.locator(".kit-sweep").first
    sweep.get_by_text("completed · 4/4 trials done").wait_for(timeout=120_000)
    shots(page, "reused-sweep", focus=sweep)
    header = sweep.locator(".kit-trials th").all_text_contents()
    assert "reused" in header, header
    column = header.index("reused")
    cells = [
        row.locator("td").nth(column).text_content() or ""
        for row in sweep.locator(".kit-trial-row").all()
    ]
    # One trial of each beam decodes; the other, its normaliser alone differing, reuses.
    assert sorted(cells) == ["", "", "200", "200"], cells
    nothing_said(page, ui, console)
