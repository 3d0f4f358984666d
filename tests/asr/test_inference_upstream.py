"""ESPnet3's own inference tests, unchanged, against Kit: what passes, and why the rest differs.

The tests come from ESPnet's source distribution (pinned in
``tests/espnet3_upstream/upstream.py``) and run in a pytest of their own, with
``espnet3``'s modules mapped onto Kit (``tests/espnet3_upstream/shim``). A test
Kit fails on purpose is a strict expected failure with its reason
(``tests/espnet3_upstream/outcomes.py``); the counts are the ones
``docs/decoding.md`` states.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from tests.espnet3_upstream import upstream

ROOT = Path(__file__).resolve().parents[2]


def outcomes(report: Path) -> dict[str, str]:
    """Return each test case's outcome (passed, xfailed, skipped, failed) from a JUnit report."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        # JUnit names the module with dots; pytest's test ids (and outcomes.py) with its path.
        module = str(case.get("classname")).replace(".", "/")
        name = f"{module}.py::{case.get('name')}"
        kinds = [child.tag for child in case]
        skipped = case.find("skipped")
        if "failure" in kinds or "error" in kinds:
            found[name] = "failed: " + next(
                (child.get("message") or "") for child in case if child.tag in ("failure", "error")
            )
        elif skipped is not None:
            xfail = skipped.get("type") == "pytest.xfail"
            found[name] = "xfailed" if xfail else "skipped"
        else:
            found[name] = "passed"
    return found


def documented_counts() -> tuple[int, int, int]:
    """Return the passed, expected-failure and skipped counts docs/decoding.md states."""
    text = " ".join((ROOT / "docs" / "decoding.md").read_text(encoding="utf-8").split())
    match = re.search(
        r"(\d+) pass, (\d+) fail on purpose \(each marked with its reason[^)]*\) and (\d+) "
        r"(?:is|are) skipped",
        text,
    )
    assert match, "docs/decoding.md no longer states the counts of ESPnet3's tests"
    passed, xfailed, skipped = (int(group) for group in match.groups())
    return passed, xfailed, skipped


def test_espnet3s_inference_tests_run_unchanged_against_kit(tmp_path: Path) -> None:
    tree = upstream.extract(tmp_path / "upstream")
    report = tmp_path / "report.xml"
    shim = ROOT / "tests" / "espnet3_upstream" / "shim"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), str(tree), str(ROOT)]))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    # ESPnet's own addopts ask for coverage of ESPnet's packages, which are not here.
    command += ["-o", "addopts=", "-p", "tests.espnet3_upstream.outcomes"]
    command += ["-p", "no:randomly", f"--junitxml={report}", *upstream.TEST_FILES]
    run = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    assert report.exists(), run.stdout + run.stderr
    found = outcomes(report)
    failed = {name: outcome for name, outcome in found.items() if outcome.startswith("failed")}
    assert not failed, "\n".join(f"{name}: {outcome}" for name, outcome in failed.items())
    counts = Counter(found.values())
    assert (counts["passed"], counts["xfailed"], counts["skipped"]) == documented_counts()
