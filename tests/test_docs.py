"""The manual: it builds offline with every reference to Kit's names resolved, and reads right."""

from __future__ import annotations

import html
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.browser import browser

ROOT = Path(__file__).resolve().parents[1]


def docs_conf() -> Any:
    """The manual's ``docs/conf.py``, read again (as Sphinx would import it)."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        return importlib.reload(importlib.import_module("conf"))
    finally:
        sys.path.remove(str(ROOT / "docs"))


def shown_text(page: Path) -> str:
    """What a reader sees of a built page: its text, scripts left out, spaces made single."""
    markup = re.sub(r"<script.*?</script>", " ", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_every_public_name_has_its_page_in_the_api_reference(site: Path) -> None:
    conf = docs_conf()
    pages = {page.stem for page in (site / "_api" / "generated").glob("*.html")}
    missing = []
    for package in conf.PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            owners = [
                p for p in conf.PACKAGES if getattr(importlib.import_module(p), name, None) is obj
            ]
            if not any(f"{owner}.{name}" in pages for owner in owners):
                missing.append(f"{package}.{name}")
    assert missing == []


def test_the_runner_page_shows_its_signature_parameters_and_methods(
    site: Path, tmp_path: Path
) -> None:
    with browser() as chromium:
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


def test_the_sweeps_page_renders_its_sections_and_code(site: Path, tmp_path: Path) -> None:
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        page.goto((site / "sweeps.html").as_uri())
        title = page.locator("h1").inner_text().strip().rstrip("#").strip()
        assert title == "Sweeps and comparisons"
        assert "kit.sweep(" in page.locator("div.highlight pre").first.inner_text()
        # The page's own table of contents, in the right sidebar, lists its sections.
        toc = page.locator("nav.bd-toc-nav, .bd-sidebar-secondary").first.inner_text()
        assert "Search instead of a grid" in toc and "Is b better, or is it noise?" in toc, toc[
            :500
        ]
        page.screenshot(path=str(tmp_path / "sweeps.png"), full_page=False)


def test_the_cli_page_is_written_from_the_parser_with_the_exit_codes(site: Path) -> None:
    from kit.cli import EXIT_CODES, build_parser

    text = shown_text(site / "cli.html")
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    missing = [name for name in commands if f"kit {name}" not in text]
    assert missing == []
    assert all(meaning.split(" (")[0] in text for meaning in EXIT_CODES.values())


def test_the_performance_page_holds_every_benchmark_result(site: Path) -> None:
    text = (site / "performance.html").read_text(encoding="utf-8")
    for result in sorted((ROOT / "benchmarks" / "results").glob("*.md")):
        machine = next(
            line for line in result.read_text().splitlines() if line.startswith("Machine:")
        )
        assert machine.split(";")[0].removeprefix("Machine: ") in text, result.name


def test_the_notebooks_ship_without_outputs_so_the_manual_shows_none_stale() -> None:
    import json

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
    # The dashboard as it was shown, as the run started: one line, not the bokeh document.
    assert re.search(r"<Kit dashboard: \w+, \d+/\d+ items, 0 failed; live in Jupyter>", quickstart)
    assert "render_bundle" not in quickstart
    assert "greedy return" in text("05_rl_cartpole")
    assert "exercise 1 skipped, its solution runs below" in text("04_workshop")
    # Those that need a corpus, a SLURM or answers are shown as they ship.
    assert "cell_output" not in (site / "_notebooks" / "02_decoding_check.html").read_text()


def test_reading_the_docs_configuration_changes_nothing_in_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The workshop's solutions switch is the build's: kernels started here must not see it."""
    monkeypatch.delenv("KIT_WORKSHOP_SOLUTIONS", raising=False)
    docs_conf()
    assert "KIT_WORKSHOP_SOLUTIONS" not in os.environ
