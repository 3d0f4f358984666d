"""A resume reuses records only if the same code and keywords would make them again."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kit import Runner
from kit.errors import StoreError
from tests.workloads import Affine, Scaled, ToyProvider, toy_config

ROOT = Path(__file__).resolve().parents[1]


def test_a_resume_with_other_keywords_is_refused_with_their_names(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Scaled(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10), scale=1.0)
    before = sorted(p.name for p in (out / "chunks").iterdir())
    with pytest.raises(StoreError) as info:
        Scaled(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10), scale=2.0)
    assert str(info.value) == (
        f"{out} holds records another version of this run made: the keywords of run(...) "
        "differ (scale); resuming would mix records of both versions; start over in a new "
        "folder (`-o runs/NEW` on the command line; output_dir=... in Python) or delete this "
        "one first (resume=False in Python deletes the stored results)"
    )
    assert sorted(p.name for p in (out / "chunks").iterdir()) == before
    again = Scaled(ToyProvider(toy_config()), output_dir=out, chunk_size=5, resume=False)
    assert again.run(range(10), scale=2.0).records == [i * 2 * 2.0 for i in range(10)]


class Affine2(Runner):
    """Affine's twin whose forward was edited (what a notebook cell re-run does)."""

    @staticmethod
    def forward(idx: int, model: Any, offset: int = 0) -> dict[str, Any]:
        return {"idx": idx, "y": idx * model.factor + offset + 1}


def test_a_resume_after_forward_was_edited_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    edited = type("Affine", (Runner,), {"forward": Affine2.__dict__["forward"]})
    edited.__module__, edited.__qualname__ = Affine.__module__, Affine.__qualname__
    with pytest.raises(StoreError, match="another version of this run made: forward's code"):
        edited(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))


def test_the_same_code_resumes_from_another_process(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Scaled(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10), scale=0.5)
    # Another process has another hash seed: the digests must not depend on it.
    script = textwrap.dedent(
        f"""
        from tests.workloads import Scaled, ToyProvider, toy_config
        result = Scaled(ToyProvider(toy_config()), output_dir={str(out)!r}, chunk_size=5).run(
            range(10), scale=0.5
        )
        print(result.stats.resumed)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.split()[-1] == "10", done.stderr
