"""The manual: it builds offline with every reference to Kit's names resolved, and reads right."""

from __future__ import annotations

import html
import importlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def docs_module(name: str = "conf", folder: str = "docs") -> Any:
    """A script of ``docs/`` (its ``conf.py`` by default) or another folder, read again."""
    sys.path.insert(0, str(ROOT / folder))
    try:
        return importlib.reload(importlib.import_module(name))
    finally:
        sys.path.remove(str(ROOT / folder))


def shown_text(page: Path) -> str:
    """What a reader sees of a built page: its text, scripts left out, spaces made single."""
    markup = re.sub(r"<script.*?</script>", " ", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_every_public_name_has_its_page_in_the_api_reference(site: Path) -> None:
    conf = docs_module()
    pages = {page.stem for page in (site / "_api" / "generated").glob("*.html")}
    missing = []
    for package in conf.PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            # vars(), not getattr(): a name that moved answers getattr() with a warning.
            owners = [p for p in conf.PACKAGES if vars(importlib.import_module(p)).get(name) is obj]
            if not any(f"{owner}.{name}" in pages for owner in owners):
                missing.append(f"{package}.{name}")
    assert missing == []


def test_the_runner_page_shows_its_signature_parameters_and_methods(
    site: Path, chromium: Any, tmp_path: Path
) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto((site / "_api" / "generated" / "kit.Runner.html").as_uri())
    assert page.locator("h1").inner_text().strip().rstrip("#").strip() == "kit.Runner"
    signature = page.locator("dt.sig").first.inner_text()
    assert "provider" in signature and "chunk_size" in signature
    text = page.locator("article").inner_text()
    for words in ("Parameters", "Examples"):
        assert words in text, words
    for method in ("run", "submit", "prepare"):
        assert page.locator(f'dt[id="kit.Runner.{method}"]').count() == 1, method
    page.screenshot(path=str(tmp_path / "runner.png"), full_page=False)


def test_the_sweeps_page_renders_its_sections_and_code(
    site: Path, chromium: Any, tmp_path: Path
) -> None:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto((site / "sweeps.html").as_uri())
    title = page.locator("h1").inner_text().strip().rstrip("#").strip()
    assert title == "Sweeps and comparisons"
    assert "kit.sweep(" in page.locator("div.highlight pre").first.inner_text()
    # The page's own table of contents, in the right sidebar, lists its sections.
    toc = page.locator("nav.bd-toc-nav, .bd-sidebar-secondary").first.inner_text()
    assert "Search instead of a grid" in toc and "Is b better, or is it noise?" in toc, toc[:500]
    page.screenshot(path=str(tmp_path / "sweeps.png"), full_page=False)


def test_the_cli_page_is_written_from_the_parser_with_the_exit_codes(site: Path) -> None:
    from kit.cli import EXIT_CODES, build_parser

    text = shown_text(site / "cli.html")
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    # The usage lines are highlighted token by token: `kit export-tracking` shows as
    # "kit export - tracking" once the markup is gone.
    usage = text.replace(" - ", "-")
    missing = [name for name in commands if f"kit {name}" not in usage]
    assert missing == []
    assert all(meaning.split(" (")[0] in text for meaning in EXIT_CODES.values())


def test_the_performance_page_is_written_from_every_results_file_with_its_machine(
    site: Path,
) -> None:
    machine = docs_module("_machine", folder="benchmarks")
    text = shown_text(site / "performance.html").replace("\u2019", "'")  # Sphinx's apostrophes
    results = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert len(results) >= 10
    for result in results:
        figures = json.loads(result.read_text(encoding="utf-8"))
        page = figures["page"]
        # The machine line is made from the machine the JSON records, at each build.
        line = machine.machine_line(figures["machine"], tuple(page["packages"]))
        assert " ".join(line.split()) in text, result.name
        assert page["title"] in text, result.name
        targets = [f"{'PASS' if ok else 'MISS'}: {k}" for k, ok in figures["checks"].items()]
        missing = [t for t in targets if " ".join(t.replace("`", "").split()) not in text]
        assert missing == [], result.name


def test_the_notebooks_ship_without_outputs_so_the_manual_shows_none_stale() -> None:
    stale = []
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        if any(c.get("outputs") or c.get("execution_count") for c in cells):
            stale.append(notebook.name)
    assert stale == []


def test_the_readme_is_short_and_its_picture_is_there() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    pictures = [
        line.split("](")[1].rstrip(")") for line in readme.splitlines() if line.startswith("![")
    ]
    assert pictures and all((ROOT / picture).is_file() for picture in pictures), pictures


def test_the_quick_notebooks_are_run_by_the_build_and_show_their_outputs(site: Path) -> None:
    def text(name: str) -> str:
        return shown_text(site / "_notebooks" / f"{name}.html")

    quickstart = text("01_quickstart")
    assert "20 ok, 0 failed" in quickstart
    # The dashboard as it was shown, as the run started: one line, not the bokeh document,
    # its status in the words the live header uses ("starting cluster").
    shown = r"<Kit dashboard: [a-z ]+, \d+/\d+ items, 0 failed; live in Jupyter>"
    assert re.search(shown, quickstart)
    assert "render_bundle" not in quickstart
    assert "greedy return" in text("05_rl_cartpole")
    assert "exercise 1 skipped, its solution runs below" in text("04_workshop")


def test_the_slow_notebooks_show_the_outputs_stored_for_their_code(site: Path) -> None:
    decoding = shown_text(site / "_notebooks" / "02_decoding_check.html")
    assert "The outputs below were stored from a run on" in decoding
    assert "<Kit experiment: DecodeRunner over DecodeProvider, 0 runs" in decoding
    assert re.search(r"trial-002 5 whisper 0\.\d+ best", decoding)  # the sweep's table
    assert "95% paired bootstrap" in decoding
    assert "render_bundle" not in decoding and "BokehJS" not in decoding
    scale_out = shown_text(site / "_notebooks" / "03_scale_out.html")
    assert "on SLURM: {'wer'" in scale_out and "['SLURMCluster-0', 'SLURMCluster-1']" in scale_out
    assert re.search(r"completed \{'wer'", scale_out)  # the detached run, attached again


def test_stored_outputs_hold_no_error_and_nothing_a_static_page_cannot_show() -> None:
    stored = docs_module("stored_outputs")
    for name in stored.SLOW:
        book = json.loads((stored.STORED / name).read_text(encoding="utf-8"))
        outputs = [o for c in book["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
        assert outputs and all(o["output_type"] != "error" for o in outputs), name
        assert not any(set(o.get("data", {})) & set(stored.UNSHOWN) for o in outputs), name
        assert "widgets" not in book["metadata"], name


def test_outputs_stored_for_other_code_stop_the_build(tmp_path: Path) -> None:
    stored = docs_module("stored_outputs")
    shipped = ROOT / "notebooks" / "03_scale_out.ipynb"
    book = json.loads(shipped.read_text(encoding="utf-8"))
    markdown = next(c for c in book["cells"] if c["cell_type"] == "markdown")
    markdown["source"] = "# Retitled: prose is not what made the outputs"
    edited = tmp_path / shipped.name
    edited.write_text(json.dumps(book))
    assert "on SLURM:" in stored.with_stored_outputs(edited)
    code = next(c for c in book["cells"] if c["cell_type"] == "code")
    code["source"] = "print('other code')"
    edited.write_text(json.dumps(book))
    with pytest.raises(stored.StaleOutputs) as info:
        stored.with_stored_outputs(edited)
    assert str(info.value).startswith(
        "03_scale_out.ipynb: its code changed since its outputs were stored in "
    )
    assert "run `make notebook-outputs`" in str(info.value)
    with pytest.raises(stored.StaleOutputs, match="no outputs are stored in"):
        stored.with_stored_outputs(edited, tmp_path / "nothing.ipynb")


def test_reading_the_docs_configuration_changes_nothing_in_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The workshop's solutions switch is the build's: kernels started here must not see it."""
    monkeypatch.delenv("KIT_WORKSHOP_SOLUTIONS", raising=False)
    docs_module()
    assert "KIT_WORKSHOP_SOLUTIONS" not in os.environ
