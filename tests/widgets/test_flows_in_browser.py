"""Each notebook flow a workshop lives, clicked in Chromium, in JupyterLab 4 and in Notebook 7.

Every step saves a screenshot into the test's tmp folder (``screenshots/``).
"""

from __future__ import annotations

import ast
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.cluster._seats import who
from tests.jupyter import (
    ROOT,
    UIS,
    Jupyter,
    Shots,
    log_console_entries,
    open_and_run_all,
    save,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_idle_clusters")]

APP = (
    "from kit import widgets\n"
    "from tests.workloads import {provider}, {runner}, toy_config\n"
    "app = widgets.Experiment(\n"
    "    toy_config({config}), {provider}, {runner}, indices=range({items}),\n"
    "    runs_dir={runs!r}, config_path='exp.yaml',\n"
    ")\n"
    "app"
)


#: The flows whose screens Notebook 7 draws apart from JupyterLab run in both: a Kit
#: widget's form with the log console, the first dashboard (Notebook 7 loads the widget
#: and BokehJS extensions in a page of its own, one notebook wide) and Run All stopping at
#: a blank. The other flows run in JupyterLab only: what they check happens in the kernel
#: and in Kit's widgets, drawn the same under either UI.
BOTH_UIS = pytest.mark.parametrize("jupyter", UIS, indirect=True)


def app_cell(config: str, provider: str, runner: str, items: int, runs: str) -> str:
    return APP.format(config=config, provider=provider, runner=runner, items=items, runs=runs)


@pytest.fixture(params=["lab"])
def jupyter(request: pytest.FixtureRequest, serve: Callable[..., Jupyter]) -> Jupyter:
    """The session's server of the test's UI: JupyterLab unless the test asks for both."""
    return serve(request.param)


@pytest.fixture
def page(chromium: Any, jupyter: Jupyter) -> Iterator[Any]:
    context = chromium.new_context(viewport={"width": 1300, "height": 1100})
    try:
        yield context.new_page()
    finally:
        context.close()
        jupyter.shut_down_kernels()  # and with them the clusters the notebook started


@pytest.fixture
def shots(tmp_path: Path, jupyter: Jupyter) -> Shots:
    # The manual's pictures are JupyterLab's (make screenshots).
    return Shots(tmp_path / "screenshots", publish=jupyter.ui == "lab")


def field_input(page: Any, label: str) -> Any:
    """The input of the widget whose label reads ``label`` exactly."""
    return (
        page.locator(
            ".widget-inline-hbox", has=page.locator("label", has_text=re.compile(f"^{label}$"))
        )
        .locator("input")
        .first
    )


def edit_config(page: Any, key: str, value: str) -> Any:
    """Type ``value`` into the editor's field ``key``; wait until the edit is an override."""
    box = field_input(page, key)
    box.wait_for(timeout=90_000)
    box.fill(value)
    box.press("Enter")
    page.wait_for_function(
        "want => [...document.querySelectorAll('.kit-overrides')]"
        ".some(e => e.textContent.includes(want))",
        arg=f"{key}={value}",
        timeout=30_000,
    )
    return box


def button(page: Any, text: str) -> Any:
    return page.locator("button.widget-button", has_text=re.compile(rf"^\s*{text}\s*$")).first


def status(page: Any, word: str) -> Any:
    return page.locator(f".kit-status[data-status='{word}']").first


@pytest.fixture
def run_shipped(
    page: Any, jupyter: Jupyter, shots: Shots, request: pytest.FixtureRequest
) -> Callable[..., Any]:
    """Run All of a notebook of notebooks/, as shipped; wait for a locator and shoot it.

    Call it as ``run_shipped(name, until, shot, timeout, speech=False)``; ``until`` is
    a locator (lazy, so built before the run) and is returned. ``speech=True`` puts
    the spoken corpus where the notebook looks for it first, as ``make lab`` does.
    """

    def run(name: str, until: Any, shot: str, timeout: int, *, speech: bool = False) -> Any:
        if speech:
            request.getfixturevalue("spoken_corpus")(jupyter.folder)
        shutil.copy(ROOT / "notebooks" / name, jupyter.folder / name)
        open_and_run_all(page, jupyter, name)
        try:
            until.wait_for(timeout=timeout)
        except Exception:
            # What the page showed when the wait ran out: the screen to look at.
            shots(page, f"{shot}-timed-out")
            raise
        shots(page, shot, focus=until)
        return until

    return run


def no_error_outputs(page: Any) -> None:
    errors = page.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [errors.nth(i).text_content() or "" for i in range(errors.count())]
    assert not [t for t in texts if "Traceback" in t or "Error" in t], texts


def broken_words(page: Any, table: str) -> list[str]:
    """One-word cells of ``table`` (a CSS selector) drawn over more than one line."""
    script = """(selector) => [...document.querySelectorAll(selector + ' td')].filter(td => {
        const text = td.textContent.trim();
        if (!text || /\\s/.test(text)) return false;
        const range = document.createRange();
        range.selectNodeContents(td);
        return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
    }).map(td => td.textContent)"""
    found: list[str] = page.evaluate(script, table)
    return found


@BOTH_UIS
def test_edit_run_and_watch(jupyter: Jupyter, page: Any, shots: Shots) -> None:
    """Type a value into the config editor, run on 10 items, read the table and history."""
    cell = app_cell(
        "sleep=0.05, parallel={'env': 'local', 'n_workers': 2}",
        "ToyProvider",
        "Affine",
        100,
        "runs/edit",
    )
    open_and_run_all(page, jupyter, jupyter.write("edit.ipynb", [cell]))
    field_input(page, "factor").wait_for(timeout=90_000)
    shots(page, "loaded")
    edit_config(page, "factor", "5")
    button(page, "Run").click()
    page.locator(".kit-header", has_text="(100%)").first.wait_for(timeout=120_000)
    rows = page.locator(".kit-results tr.kit-ok")
    rows.first.wait_for(timeout=60_000)
    shots(page, "done", picture="experiment")
    assert rows.count() == 10
    assert (rows.nth(3).text_content() or "").replace(" ", "") == "3316"  # y = 3 * 5 + 1
    assert "10/10" in (page.locator(".kit-header").first.text_content() or "")
    assert "(first run)" in (page.locator(".kit-history").first.text_content() or "")

    # Tick "track": the viewers' commands show beside the box, and the next run is in MLflow.
    page.locator(".widget-checkbox", has_text="track in TensorBoard and MLflow").locator(
        "input"
    ).check()
    viewer = page.locator("code.kit-viewer", has_text="mlflow ui --backend-store-uri").first
    viewer.wait_for(timeout=30_000)
    button(page, "Run").click()
    page.locator(".kit-history tr.kit-run-row").nth(1).wait_for(timeout=120_000)
    shots(page, "tracked", focus=viewer)
    runs = jupyter.folder / "runs" / "edit"
    assert (
        viewer.text_content() or ""
    ) == "mlflow ui --backend-store-uri sqlite:///runs/edit/mlflow.db"
    assert "tensorboard --logdir runs/edit/tensorboard" in (
        page.locator("code.kit-viewer").first.text_content() or ""
    )
    assert (runs / "tensorboard" / "002").is_dir() and (runs / "mlflow.db").is_file()
    # What the exporters' threads print lands in the cell or the log console: nothing.
    stderr = page.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.all_text_contents() == []
    assert log_console_entries(page, jupyter.ui) == []


@BOTH_UIS
def test_the_first_dashboard_reaches_completed(
    jupyter: Jupyter, page: Any, shots: Shots, run_shipped: Callable[..., Any]
) -> None:
    """Why 1: notebook 01's 20-item run ends before its dashboard is drawn."""
    header = page.locator(".kit-header", has_text="completed").first
    run_shipped("01_quickstart.ipynb", header, "dashboard-completed", 120_000)
    page.locator(".kit-header", has_text="20/20").first.wait_for(timeout=30_000)
    text = header.text_content() or ""
    assert "resumed" not in text and "running" not in text
    assert page.locator("canvas").count() > 0  # the plots are drawn
    # Why 7: "0 failed" is no alarm (not red), and numbers are short (no 17-digit floats).
    assert "0 failed" in text and page.locator(".kit-header .kit-failed-count").count() == 0
    assert not re.search(r"\d\.\d{6,}", text), text
    no_error_outputs(page)


def test_a_typo_shows_the_config_error_and_run_works_again(
    jupyter: Jupyter, page: Any, shots: Shots
) -> None:
    """Why 2: `mode=gramar` typed into the editor, then Run."""
    cell = app_cell("mode='grammar'", "MistypedProvider", "Decodes", 10, "runs/typo")
    open_and_run_all(page, jupyter, jupyter.write("typo.ipynb", [cell]))
    edit_config(page, "mode", "gramar")
    shots(page, "typed")
    button(page, "Run").click()
    error = page.locator(".kit-error", has_text="did you mean 'grammar'").first
    error.wait_for(timeout=90_000)
    status(page, "error").wait_for(timeout=30_000)
    page.locator(".kit-history", has_text="error").first.wait_for(timeout=30_000)
    shots(page, "error-shown", focus=error, picture="config-error")
    assert "decoder.mode: 'gramar' is not a valid choice" in (error.text_content() or "")
    assert "AssertionError" not in (page.locator("body").text_content() or "")
    assert button(page, "Run").is_enabled() and not button(page, "Cancel").is_enabled()
    # Fixed, it runs; the history keeps both rows.
    mode = field_input(page, "mode")
    mode.fill("grammar")  # back to the base config: no override left to wait for
    mode.press("Enter")
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.kit-overrides')]"
        ".some(e => e.textContent.includes('mode=gramar'))",
        timeout=30_000,
    )
    button(page, "Run").click()
    status(page, "completed").wait_for(timeout=90_000)
    page.locator(".kit-history", has_text="mode=grammar").first.wait_for(timeout=30_000)
    shots(page, "fixed-and-run")
    history = page.locator(".kit-history").first.text_content() or ""
    assert "error" in history and "completed" in history
    # The error is shown where it belongs, not also as a traceback behind the page.
    assert log_console_entries(page, jupyter.ui) == []


def test_cancel_shows_what_ran_and_one_not_run_line(
    jupyter: Jupyter, page: Any, shots: Shots
) -> None:
    """Why 6: after Cancel, no rows of None; the history says cancelled."""
    # Items from 20 on wait for a gate opened once Cancel is clicked: the run is still
    # going then, however busy the machine (200 x 50 ms once ended first: no Cancel).
    gate = jupyter.folder / "runs" / "cancel-gate"
    held = f"sleep=0.02, gate={str(gate)!r}, gate_from=20"
    cell = app_cell(held, "ToyProvider", "Affine", 200, "runs/cancel")
    open_and_run_all(page, jupyter, jupyter.write("cancel.ipynb", [cell]))
    how_many = field_input(page, "run on")
    how_many.wait_for(timeout=90_000)
    how_many.fill("200")
    how_many.press("Enter")
    page.locator(".kit-pool", has_text="of 200 items").first.wait_for(timeout=10_000)
    button(page, "Run").click()
    page.locator(".kit-header", has_text=re.compile(r"running .*[1-9]\d*/200")).first.wait_for(
        timeout=90_000
    )
    shots(page, "running")
    button(page, "Cancel").click()
    gate.parent.mkdir(parents=True, exist_ok=True)
    gate.touch()  # the chunks running then end; the pending ones were cancelled
    status(page, "cancelled").wait_for(timeout=60_000)
    not_run = page.locator(".kit-not-run", has_text="items not run (cancelled)").first
    not_run.wait_for(timeout=30_000)
    page.locator(".kit-history", has_text="cancelled").first.wait_for(timeout=30_000)
    shots(page, "cancelled", focus=not_run)
    table = page.locator(".kit-results").first.text_content() or ""
    assert "None" not in table
    assert page.locator(".kit-results tr.kit-ok").count() < 200
    assert button(page, "Run").is_enabled()


def test_the_cluster_panel_is_the_cluster_runs_use(
    jupyter: Jupyter, page: Any, shots: Shots
) -> None:
    """Why 3: Start, Stop, set 3 workers, Start; the next Run uses that cluster."""
    cell = app_cell(
        "sleep=0.02, parallel={'env': 'local', 'n_workers': 1}",
        "ToyProvider",
        "Affine",
        60,
        "runs/cluster",
    )
    open_and_run_all(page, jupyter, jupyter.write("cluster.ipynb", [cell]))
    page.locator(".jupyter-widget-Collapse-header", has_text=re.compile(r"^\s*cluster\s*$")).click()
    button(page, "Start").wait_for(timeout=90_000)
    assert "stopped" in (page.locator(".kit-cluster-panel").first.text_content() or "")
    button(page, "Start").click()
    panel = page.locator(".kit-cluster-panel").first
    panel.locator(".kit-workers tr").nth(1).wait_for(timeout=120_000)
    shots(page, "started-1-worker")
    button(page, "Stop").click()
    page.locator(".kit-cluster-panel", has_text="stopped").first.wait_for(timeout=60_000)
    workers = field_input(page, "workers")
    workers.fill("3")
    workers.press("Enter")
    button(page, "Start").click()
    panel.locator(".kit-workers tr").nth(3).wait_for(timeout=120_000)
    shots(page, "started-3-workers")
    field_input(page, "run on").fill("60")
    field_input(page, "run on").press("Enter")
    button(page, "Run").click()
    status(page, "completed").wait_for(timeout=120_000)
    shots(page, "run-on-the-panel-cluster", focus=panel, picture="cluster-panel")
    ended = re.compile(r"completed: \d+ ok")
    line = page.locator(".kit-run-panel .widget-html", has_text=ended).first
    assert "on 3 workers" in (line.text_content() or "")
    assert panel.locator(".kit-workers tr").count() == 4  # header and three workers, no more
    # Stopping and starting clusters leaves nothing behind the page.
    assert log_console_entries(page, jupyter.ui) == []


def test_check_then_scale_out_prints_a_command_that_names_the_local_config(
    jupyter: Jupyter, page: Any, shots: Shots
) -> None:
    """Why 5: Check gives its verdict beside the buttons; the command names exp.yaml
    (saved with the runs) and a job's resources."""
    cell = app_cell("", "ToyProvider", "Affine", 10, "runs/scale")
    open_and_run_all(page, jupyter, jupyter.write("scale.ipynb", [cell]))
    edit_config(page, "factor", "5")
    button(page, "Check").click()
    card = page.locator(".kit-check[data-ok='true']").first
    card.wait_for(timeout=60_000)
    shots(page, "check", focus=card, picture="check")
    text = card.text_content() or ""
    assert "PASS on 10 items" in text and "the same records every way" in text
    assert "forecast  10 items on 1 slot:" in text  # where Scale out sends it: one 1-core job
    button(page, "Scale out").click()
    command = page.locator(".kit-scale-out").first
    command.wait_for(timeout=30_000)
    shots(page, "scale-out", focus=command)
    assert (command.text_content() or "").strip() == (
        "kit submit runs/scale/exp.yaml factor=5 +parallel.env=slurm "
        "+parallel.options.cores=1 +parallel.options.memory=2GB"
    )
    # The check ran in the background of the kernel: nothing of it reaches the log.
    assert log_console_entries(page, jupyter.ui) == []


@BOTH_UIS
def test_a_workshop_blank_stops_run_all_with_a_short_message(
    jupyter: Jupyter, page: Any, shots: Shots, run_shipped: Callable[..., Any]
) -> None:
    """Why 4: the workshop notebook has blanks; Run All stops at the first, saying where."""
    message = page.locator(".jp-OutputArea-output", has_text="ExerciseNotDone").first
    run_shipped("04_workshop.ipynb", message, "exercise-1-blank", 90_000)
    text = message.text_content() or ""
    assert "Exercise 1 has 3 blanks left" in text and "line 5: return ..." in text
    assert "Traceback" not in text and "site-packages" not in text
    # Solutions stay folded: their code is not on the screen.
    assert not page.get_by_text('return lambda: {"vocabulary"').first.is_visible()


def test_the_scale_out_notebook_shows_no_log_noise(
    slurm: None, jupyter: Jupyter, page: Any, shots: Shots, run_shipped: Callable[..., Any]
) -> None:
    """Why 8: notebook 03 without distributed's INFO lines, and a detached run knows its total.

    This is notebook 03's one full run in the suite (a SLURM job, a remote
    scheduler and a detached run are its cost): it checks what a headless run
    would, the job script and each way's WER, and what a person sees.
    """
    done = page.locator(".jp-OutputArea-output", has_text="completed {'wer'").first
    run_shipped("03_scale_out.ipynb", done, "detached-completed", 240_000, speech=True)
    outputs = page.locator(".jp-OutputArea-output")
    texts = [outputs.nth(i).text_content() or "" for i in range(outputs.count())]
    out = "\n".join(texts)
    assert "#SBATCH" in out
    assert "on SLURM: {'wer'" in out
    assert "remote: {'wer'" in out
    no_error_outputs(page)
    # The detached run is kept beside the notebook, with its others: no temporary folder.
    assert (jupyter.folder / "runs" / "scale-out-detached" / "result.json").is_file()
    noise = [t for t in texts if re.search(r" - distributed(\.\w+)* - [A-Z]+ - ", t)]
    assert not noise, noise[:2]
    assert not [t for t in texts if "0/0 items" in t]
    assert list(jupyter.folder.glob("slurm-*.out")) == []  # job logs go elsewhere


def test_a_solved_training_reads_completed(
    jupyter: Jupyter, page: Any, shots: Shots, run_shipped: Callable[..., Any]
) -> None:
    """Why 7: CartPole's dashboard says completed, not '20/200 items (10%)', for a solved run."""
    header = page.locator(".kit-header", has_text="completed").first
    run_shipped("05_rl_cartpole.ipynb", header, "training-completed", 180_000)
    page.locator(".jp-OutputArea-output", has_text="greedy return over 20 episodes").first.wait_for(
        timeout=120_000
    )
    text = header.text_content() or ""
    assert not re.search(r"\((?!100%)\d+%\)", text), text  # no "(10%)" for a finished run
    no_error_outputs(page)


@pytest.mark.long
def test_the_decoding_check_reaches_its_wer_table(
    jupyter: Jupyter, page: Any, shots: Shots, run_shipped: Callable[..., Any]
) -> None:
    """Notebook 02 as shipped, in JupyterLab, from a cold kernel: its tables, values and sweep.

    This is notebook 02's one full run in the suite (decoding is its cost):
    it checks what a headless run would (outputs, values, no log noise) and
    what a person sees.
    """
    table = page.locator(".jp-RenderedHTMLCommon table", has_text="changes").first
    run_shipped("02_decoding_check.ipynb", table, "wer-table", 240_000, speech=True)
    head = table.locator("thead").text_content() or ""
    assert all(column in head for column in ("changes", "sample", "wer", "rtf"))
    assert table.locator("tbody tr").count() == 2  # Whisper, PocketSphinx
    assert "decoder.engine=pocketsphinx" in (table.text_content() or "")
    # The sweep cell: its trials' table fills in live, then the plots and the comparison.
    sweep = page.locator(".kit-sweep").first
    sweep.wait_for(timeout=120_000)
    seen = set()
    rows = sweep.locator("tr.kit-trial-row")
    deadline = time.monotonic() + 240
    while True:
        statuses = [rows.nth(i).get_attribute("data-status") for i in range(rows.count())]
        seen.update(statuses)
        if len(statuses) == 4 and set(statuses) == {"completed"}:
            break
        assert time.monotonic() < deadline, f"the sweep's trials still read {statuses}"
        page.wait_for_timeout(200)
    assert seen & {"pending", "running"}, seen  # it filled in as the trials ran
    sweep.locator(".bk-Canvas, canvas").first.wait_for(timeout=60_000)  # the plots
    compared = page.locator(".jp-OutputArea-output", has_text="paired bootstrap").first
    compared.wait_for(timeout=60_000)
    shots(page, "sweep-table-and-plots", focus=sweep, picture="sweep")
    text = sweep.text_content() or ""
    assert "decoder.engine" in text and "pocketsphinx" in text and "4/4 trials done" in text
    assert "random 10 of 250, seed 1" in (table.text_content() or "")
    # The values: Whisper beats PocketSphinx on these 10, and the sweep's trials agree with
    # the runs by hand on the same utterances.
    summaries = {}
    for name in ("whisper", "sphinx"):
        cell = page.locator(".jp-CodeCell", has_text=f"{name} = panel.wait").first
        output = cell.locator(".jp-OutputArea-output").last.text_content() or ""
        summaries[name] = ast.literal_eval(output)  # a plain dict literal
    assert summaries["whisper"]["wer"] < summaries["sphinx"]["wer"]
    assert all(s["utterances"] == 10 for s in summaries.values())
    # In the notebook's own folder, runs/<user>/<notebook>/ (kit.history.user_folder).
    mine = jupyter.folder / "runs" / who() / "02_decoding_check" / "decoderunner"
    swept = kit.attach(mine / "sweep-001").result(timeout=10)
    rows = swept.rows()
    assert [(r["trial"], r["decoder.beam_size"], r["decoder.engine"]) for r in rows] == [
        ("trial-000", "1", "whisper"),
        ("trial-001", "1", "pocketsphinx"),
        ("trial-002", "5", "whisper"),
        ("trial-003", "5", "pocketsphinx"),
    ]
    wers = {(r["decoder.beam_size"], r["decoder.engine"]): r["wer"] for r in rows}
    assert wers[("5", "whisper")] == pytest.approx(summaries["whisper"]["wer"])
    assert wers[("5", "pocketsphinx")] == pytest.approx(summaries["sphinx"]["wer"])
    assert "10 items" in (compared.text_content() or "")
    page.locator(".jp-OutputArea-output", has_text="hyp_a").first.wait_for(timeout=60_000)
    # PocketSphinx's errors, aligned as sclite aligns them, each marked by its kind.
    aligned = page.locator(".jp-OutputArea-output", has_text="utterances with the most").first
    aligned.wait_for(timeout=60_000)
    assert "Decoding scores (normalizer: whisper)" in (aligned.text_content() or "")
    marks = aligned.locator("pre.kit-aligned mark")
    assert marks.count() > 0 and marks.first.evaluate("m => getComputedStyle(m).backgroundColor")
    shots(page, "alignments", focus=aligned)
    page.locator(".jp-OutputArea-output", has_text="kit submit").first.wait_for(timeout=60_000)
    outputs = page.locator(".jp-OutputArea-output")
    texts = [outputs.nth(i).text_content() or "" for i in range(outputs.count())]
    assert any("parallel.env=slurm" in t and "decoder.engine=pocketsphinx" in t for t in texts)
    noise = [t for t in texts if re.search(r" - distributed(\.\w+)* - [A-Z]+ - ", t)]
    assert not noise, noise[:2]
    no_error_outputs(page)
    assert "AssertionError" not in (page.locator("body").text_content() or "")
    # Nor behind the page: the sweep's view redraws its plots as trials end.
    assert log_console_entries(page, "lab") == []
    # The run history under the sweep, as wide as the notebook: no word split in two.
    history = page.locator(".kit-history").first
    assert history.locator("td", has_text="completed").count() >= 2
    assert broken_words(page, ".kit-history") == []
    # Saved after Run All, it stays small: BokehJS is served, not stored in each output.
    saved = jupyter.folder / "02_decoding_check.ipynb"
    save(page, saved)
    print(f"notebook 02 saved after Run All: {saved.stat().st_size:,} bytes")
    assert saved.stat().st_size < 1_000_000
    shots(page, "run-history", focus=history)


def test_an_exercise_filled_in_runs_and_its_solution_stays_out_of_the_way(
    jupyter: Jupyter, page: Any, shots: Shots, run_shipped: Callable[..., Any]
) -> None:
    """Done when: an attendee fills in exercise 1 of notebook 04 and goes on."""
    import nbformat

    book = nbformat.read(ROOT / "notebooks" / "04_workshop.ipynb", as_version=4)
    solution = next(c.source for c in book.cells if c.source.startswith("%%solution 1"))
    answer = solution.replace("%%solution 1", "%%exercise 1", 1)
    blank = page.locator(".jp-OutputArea-output", has_text="ExerciseNotDone").first
    run_shipped("04_workshop.ipynb", blank, "exercise-1-blank", 90_000)
    # As a person would: click into exercise 1, replace its text with an answer, Shift+Enter.
    exercise = page.locator(".jp-CodeCell", has_text="%%exercise 1").first
    exercise.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(answer)
    page.keyboard.press("Shift+Enter")
    records = exercise.locator(".jp-OutputArea-output", has_text="'known': 6")
    records.wait_for(timeout=60_000)
    shots(page, "exercise-1-done", focus=records)
    assert "ExerciseNotDone" not in (exercise.text_content() or "")
    # Shift+Enter moved to the folded solution; running it does not replace the answer.
    page.keyboard.press("Shift+Enter")
    skipped = page.locator(".jp-OutputArea-output", has_text="You finished exercise 1 yourself")
    skipped.first.wait_for(timeout=30_000)
    shots(page, "solution-1-skipped", focus=skipped.first)


NUMBERS = (
    "import kit\n"
    "from kit import widgets\n"
    "from kit.asr import DecodeProvider, DecodeRunner\n"
    "from kit.examples.asr import CONFIG_PATH\n"
    "app = widgets.Experiment(kit.load_config(CONFIG_PATH), DecodeProvider, DecodeRunner,\n"
    "                         runs_dir='runs/numbers')\n"
    "app"
)


def test_a_number_box_never_changes_what_was_typed(
    jupyter: Jupyter, page: Any, shots: Shots
) -> None:
    """Typing 2.5, 1e3, abc or -3 into beam_size shows why and leaves the config as it was."""
    open_and_run_all(page, jupyter, jupyter.write("numbers.ipynb", [NUMBERS]))
    section = page.locator(
        ".jupyter-widget-Collapse-header", has_text=re.compile(r"^\s*decoder\s*$")
    ).first
    section.wait_for(timeout=90_000)
    section.click()
    box = field_input(page, "beam_size")
    box.wait_for(timeout=30_000)
    cases = [
        ("2.5", "'2.5' is not a whole number"),
        ("1e3", "'1e3' is not a whole number (write 1000)"),
        ("abc", "'abc' is not a whole number"),
        ("-3", "must be at least 1, got -3"),
    ]
    for typed, says in cases:
        box.fill(typed)
        box.press("Enter")
        error = page.locator(".kit-error", has_text=says).first
        error.wait_for(timeout=30_000)
        assert box.input_value() == typed  # the box keeps what was typed, as typed
        assert "the value stays 5" in (error.text_content() or "")
    shots(page, "number-refused", focus=box)
    # A wheel over the focused box changes nothing either (it is no number input).
    box.focus()
    box.hover()
    page.mouse.wheel(0, 300)
    assert box.input_value() == "-3"
    yaml_view = page.locator(".kit-overrides").first
    assert "(no changes)" in (yaml_view.text_content() or "")
    box.fill("3")
    box.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.kit-overrides')]"
        ".some(e => e.textContent.includes('decoder.beam_size=3'))",
        timeout=30_000,
    )
    assert page.locator(".kit-error", has_text="beam_size").count() == 0
