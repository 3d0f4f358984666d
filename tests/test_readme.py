"""The README's ten-line quickstart runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_ten_line_quickstart_runs(tmp_path: Path) -> None:
    text = README.read_text()
    section = text.split("## Quickstart in ten lines", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    # As a user runs it: a script file (worker processes start by importing it again).
    (tmp_path / "quickstart.py").write_text(code.group(1))
    result = subprocess.run(
        [sys.executable, "quickstart.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("[{'idx': 0, 'y': 0}, {'idx': 1, 'y': 3}, {'idx': 2, 'y': 6}]")
