"""A submit hook for the SLURM tests: records each submission, then submits unchanged."""

from __future__ import annotations

import os
from pathlib import Path

LOG = Path(os.environ.get("KIT_TEST_HOOK_LOG", "/tmp/kit-submit-hook.log"))


def record_and_submit(command: list[str]) -> list[str]:
    with LOG.open("a") as fh:
        fh.write(" ".join(command) + "\n")
    return command
