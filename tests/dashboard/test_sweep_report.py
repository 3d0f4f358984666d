"""A sweep's report.html: the trials' table with each against the best, and the plots."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.dashboard import write_sweep_report


def quadratic(tmp_path: Path) -> dict[str, Any]:
    return {
        "provider": {"_target_": "tests.workloads.KeyedProvider"},
        "runner": {"_target_": "tests.workloads.Quadratic", "chunk_size": 4},
        "items": {"start": 0, "stop": 12},
        "factor": 2,
        "x": 0.0,
        "log_dir": str(tmp_path),
        "parallel": {"env": "inline"},
    }


def drawn(path: Path) -> tuple[str, set[str]]:
    """The texts of the page's bokeh document (its Divs' HTML) and the names of its models."""
    page = path.read_text()
    assert "cdn.bokeh.org" not in page  # offline: BokehJS is inline
    found = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S)
    assert found is not None
    texts: list[str] = []
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                texts.append(node["text"])
            if isinstance(node.get("name"), str):
                names.add(node["name"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(html.unescape(found.group(1))))  # bokeh escapes it for the page
    return "\n".join(texts), names


def cells(page: str) -> list[list[str]]:
    rows = re.findall(r"<tr class='kit-trial'[^>]*>(.*?)</tr>", page)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]


def test_a_sweep_writes_its_report_as_it_ends_with_each_trial_against_the_best(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "sweep"
    kit.sweep(
        quadratic(tmp_path),
        ["x=0.1,0.3,0.9", "+tag='<b>bold</b>',plain"],
        output_dir=folder,
        metric="loss",
    )
    page, names = drawn(folder / "report.html")
    assert "judged by <b>loss</b> (lower is better)" in page
    header = re.search(r"<table class='kit-sweep-trials'.*?<tr>(.*?)</tr>", page).group(1)
    columns = re.findall(r"<th[^>]*>(.*?)</th>", header)
    assert columns[:5] == ["trial", "x", "tag", "loss", "loss vs best"]
    table = cells(page)
    assert len(table) == 6
    best = [row for row in table if row[4] == "best"]
    assert [row[1] for row in best] == ["0.3"]  # (x - 0.3)**2 is least at 0.3
    assert all(re.fullmatch(r"[+-][\d.e+-]+ \[[+-][\d.e+-]+, [+-][\d.e+-]+\]", row[4])
               for row in table if row[4] != "best")  # fmt: skip
    # Values from the config are text in the table, never markup (the plots draw text).
    assert {row[2] for row in table} == {"&#x27;&lt;b&gt;bold&lt;/b&gt;&#x27;", "plain"}
    assert {"kit-sweep-parallel", "kit-sweep-x", "kit-sweep-tag"} <= names


def test_kit_report_rebuilds_a_search_s_report_judged_by_its_metric(tmp_path: Path) -> None:
    folder = tmp_path / "search"
    kit.search(quadratic(tmp_path), ["x=interval(0,1)"], trials=3, metric="loss", output_dir=folder)
    (folder / "report.html").unlink()
    assert write_sweep_report(folder) == folder / "report.html"
    page, _ = drawn(folder / "report.html")
    assert "3/3 trials done, 0 running · judged by <b>loss</b> (lower is better)" in page
    assert len(cells(page)) == 3


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_sweep_json_of_thousands_of_trials_gives_a_bounded_page(tmp_path: Path) -> None:
    # A hostile sweep.json (200,000 entries once took kit report past 300 s: quadratic).
    from kit.dashboard._sweep_report import TABLE_ROWS

    folder = tmp_path / "s"
    kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,3"], output_dir=folder)
    record = json.loads((folder / "sweep.json").read_text())
    record["trials"] = [
        {"name": f"trial-{i:03d}", "overrides": [f"items.stop={i}"], "status": "completed"}
        for i in range(5 * TABLE_ROWS)
    ]
    (folder / "sweep.json").write_text(json.dumps(record))
    page = write_sweep_report(folder).read_text()
    assert page.count("class='kit-trial'") + page.count('class="kit-trial"') == TABLE_ROWS
    assert f"... and {4 * TABLE_ROWS:,} more trials: sweep.json lists them all" in page
