"""report.html: written after a run, rebuilt by `kit report`, renders offline in Chromium."""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import kit
from kit import EnvironmentProvider, Runner

pytest.importorskip("bokeh")


class Env(EnvironmentProvider):
    def build_env_local(self) -> dict:
        return {}

    def make_worker_setup_fn(self):  # type: ignore[no-untyped-def]
        return dict


class Decodeish(Runner):
    @staticmethod
    def forward(idx: int) -> dict:
        if idx == 13:
            raise RuntimeError("audio file is empty")
        return {"idx": idx, "metrics": {"wer": (idx % 5) / 10, "rtf": 0.2}}

    def summarize(self, records: list) -> dict:
        wers = [r["metrics"]["wer"] for r in records if r is not None]
        return {"corpus_wer": sum(wers) / len(wers)}


class _Resources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if (tag, name) in {("script", "src"), ("link", "href"), ("img", "src")} and value:
                self.found.append(value)


def external_resources(page: str) -> list[str]:
    parser = _Resources()
    parser.feed(page)
    return parser.found


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    Decodeish(Env({"beam": 10}), output_dir=out, chunk_size=10).run(range(120))
    return out


def test_a_run_with_output_dir_leaves_an_offline_report(run_dir: Path) -> None:
    page = (run_dir / "report.html").read_text()
    assert "<script" in page
    # Resources are inline: no script or stylesheet is loaded from anywhere.
    assert external_resources(page) == []
    assert "corpus_wer" in page and "beam: 10" in page  # summary and config


def test_kit_report_rebuilds_it(run_dir: Path) -> None:
    (run_dir / "report.html").unlink()
    result = subprocess.run(
        [sys.executable, "-m", "kit", "report", str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (run_dir / "report.html").exists()


def test_kit_report_on_a_folder_without_a_run_exits_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kit", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and "holds no Kit run" in result.stderr


def test_the_report_renders_in_chromium_without_network(
    run_dir: Path, chromium: Any, tmp_path: Path
) -> None:
    page = chromium.new_page(viewport={"width": 1300, "height": 1100})
    outside: list[str] = []
    page.on(
        "request",
        lambda r: (
            outside.append(r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None
        ),
    )
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((run_dir / "report.html").as_uri())
    page.wait_for_function("() => window.Bokeh !== undefined && Bokeh.documents.length > 0")
    page.locator("canvas").first.wait_for(timeout=20_000)
    page.wait_for_timeout(500)
    canvases = page.locator("canvas").count()
    header = page.get_by_text("120/120", exact=False).count()
    failures = page.get_by_text("audio file is empty", exact=False).count()
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert errors == []
    assert outside == []
    assert canvases >= 4  # progress, throughput, workers, metrics
    assert header >= 1
    assert failures >= 1
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_the_report_says_which_items_this_run_took(tmp_path: Path) -> None:
    # An Experiment's check on a few items: the provider's config says more than ran.
    out = tmp_path / "check"
    Decodeish(Env({"items": {"start": 0, "stop": 250}}), output_dir=out).run([4, 7, 11])
    page = (out / "report.html").read_text()
    assert "This run" in page and "items run" in page and "4, 7, 11" in page
    assert str(out) in page
    # One plot per metric, each with its own axis: a WER and an RTF never share one.
    assert "kit-metric-wer" in page and "kit-metric-rtf" in page


def test_running_a_finished_run_again_keeps_its_history(run_dir: Path) -> None:
    """Issue 25, 14: a re-run of a completed run found every item done; it wiped nothing."""
    from kit.dashboard import DashboardState
    from kit.events import RunStarted, read_events

    def picture() -> tuple[object, ...]:
        state = DashboardState()
        for event in read_events(run_dir / "events.jsonl"):
            state(event)
        snap = state.snapshot()
        return snap.status, snap.done, snap.failed, snap.failures, snap.metric_means

    first = picture()
    Decodeish(Env({"beam": 10}), output_dir=run_dir, chunk_size=10).run(range(120))
    sessions = [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, RunStarted)]
    assert [e.resumed for e in sessions] == [0, 120]
    assert picture() == first == ("completed", 120, 1, first[3], first[4])
    assert first[3] and set(first[4]) == {"wer", "rtf"}  # the failure and metrics are there
    assert "audio file is empty" in (run_dir / "report.html").read_text()


def test_a_cluster_runs_report_links_to_no_dask_dashboard(tmp_path: Path, local: dict) -> None:
    link = kit.get_session(local).dashboard_link
    assert link  # the live dashboard had one
    out = tmp_path / "run"
    Decodeish(Env({"beam": 10}), output_dir=out, parallel=local, chunk_size=10).run(range(20))
    page = (out / "report.html").read_text()
    assert "Dask dashboard" not in page and link not in page and "/status" not in page
