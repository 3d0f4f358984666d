"""A decoding run's report.html: its scores, the worst utterances aligned, the substitutions."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import kit
from kit.asr import DecodeProvider, DecodeRunner
from kit.cli import main
from kit.examples.asr import CONFIG_PATH
from kit.store._rundir import RunDir

pytest.importorskip("pocketsphinx")
pytest.importorskip("bokeh")

ITEMS = [0, 1, 2, 60, 61]  # slt's sentences and digit strings: PocketSphinx errs on some


def details(report: Path) -> str:
    """The HTML of the report's details (statistics, decoding, config), as the page shows it."""
    page = report.read_text()
    document = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.S)
    assert document, "no bokeh document in the page"
    # Bokeh escapes the document's JSON for a page; the Div's text is one of its strings.
    texts = re.findall(r'"text":"((?:[^"\\]|\\.)*)"', html.unescape(document.group(1)))
    return next(json.loads(f'"{t}"') for t in texts if "Statistics" in t)


def decode(corpus: Path, out: Path, *overrides: str) -> kit.RunResult:
    cfg = kit.load_config(
        CONFIG_PATH, [f"data.root={corpus}", "decoder.engine=pocketsphinx", *overrides]
    )
    return DecodeRunner(DecodeProvider(cfg), output_dir=out).run(ITEMS)


def test_a_decoding_runs_report_shows_its_scores_and_its_worst_utterances_aligned(
    corpus: Path, tmp_path: Path
) -> None:
    result = decode(corpus, tmp_path / "run")
    page = details(RunDir(tmp_path / "run").report)
    assert "<h3>Decoding scores (normalizer: whisper)</h3>" in page
    overall = re.search(r"<tr><td>all</td><td>5</td><td>(\d+)</td><td>(\d+)</td>", page)
    assert overall, page
    assert int(overall.group(1)) == result.summary["words"]
    assert int(overall.group(2)) == result.summary["substitutions"]
    worst = max(result.records, key=lambda r: r["errors"])
    assert worst["errors"] > 0
    shown = re.search(
        rf"<b>{worst['id']}</b>, slt: {worst['errors']} errors? in \d+ words?"
        r"<pre class='kit-aligned'>REF: (.*?)\nHYP: (.*?)</pre>",
        page,
    )
    assert shown, page
    marks = re.findall(r"<mark class='kit-([SDI])'", shown.group(1))
    counts = {op: marks.count(op) for op in "SDI"}
    assert counts == {
        "S": worst["substitutions"],
        "D": worst["deletions"],
        "I": worst["insertions"],
    }
    if result.summary["substitutions"]:
        assert "<h3>Top substitutions</h3>" in page


def test_kit_report_draws_the_decoding_part_again_and_other_runs_have_none(
    corpus: Path, tmp_path: Path
) -> None:
    decode(corpus, tmp_path / "run")
    report = RunDir(tmp_path / "run").report
    report.unlink()
    assert main(["report", str(tmp_path / "run")]) == 0
    assert "Decoding scores" in details(report)
    from tests.workloads import Affine, ToyProvider, toy_config

    Affine(ToyProvider(toy_config()), output_dir=tmp_path / "toy").run(range(3))
    assert "Decoding scores" not in details(RunDir(tmp_path / "toy").report)


def test_a_sweeps_trials_reports_show_their_decoding_part(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [f"data.root={corpus}", "decoder.engine=pocketsphinx", "items.stop=3"]
    sweep = tmp_path / "sweep"
    command = ["sweep", str(CONFIG_PATH), *args, "decoder.mode=lm,grammar", "-o", str(sweep)]
    assert main(command) == 0
    capsys.readouterr()
    for trial in ("trial-000", "trial-001"):
        assert "Decoding scores" in details(RunDir(sweep / trial).report)
