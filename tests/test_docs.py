"""The manual: it builds offline with every reference to Kit's names resolved, and reads right."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import browser

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual, built as ``make docs`` builds it (warnings are errors, nitpicky)."""
    pytest.importorskip(
        "sphinx", reason="the manual needs the docs extra: pip install -e '.[docs]'"
    )
    out = tmp_path_factory.mktemp("docs") / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "-q", "-b", "html", "docs", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_every_public_name_has_its_page_in_the_api_reference(site: Path) -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        conf = importlib.import_module("conf")
    finally:
        sys.path.remove(str(ROOT / "docs"))
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
