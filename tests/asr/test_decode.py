"""`kit.asr.decode`'s provider: what a run of decode.yaml says before anything is built."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from kit.cli import EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[2]
DECODE = str(ROOT / "kit" / "examples" / "asr" / "decode.yaml")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ("data.root={gone}", "data.manifest: no such file: {gone}/corpus.jsonl; build the corpus"),
        ("data.kaldi={gone}", "data.kaldi: {gone} has no wav.scp"),
    ],
)
def test_a_corpus_that_is_not_there_is_said_in_one_line_before_a_cluster_starts(
    tmp_path: Path, data: str, said: str
) -> None:
    gone = tmp_path / "not-made-yet"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        run = ["run", DECODE, data.format(gone=gone), "items.stop=2"]  # so no count reads it
        code = main([*run, f"output_dir={tmp_path / 'out'}"])
    assert code == EXIT_USAGE
    message = err.getvalue()
    assert said.format(gone=gone) in message
    assert "Traceback" not in message and "worker" not in message
    assert not (tmp_path / "out").exists()
