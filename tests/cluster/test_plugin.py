"""Which env a worker's death is blamed on, when several were being built in that process."""

from __future__ import annotations

from pathlib import Path

from kit.cluster._plugin import _suspects


def test_a_sibling_is_not_blamed_after_the_first_suspect_marked_itself_anew_and_finished(
    tmp_path: Path,
) -> None:
    # Process 41 died building envs a and b; its restart (process 42) looks at them
    # one after the other: a first, which is built again, then b.
    builds = tmp_path / "kit-env-builds"
    builds.mkdir()
    a, b = builds / "a", builds / "b"
    a.write_text("41-x building")
    b.write_text("41-x building")
    assert _suspects(a, "41-x") == ["a", "b"]
    a.write_text("42-y waiting")  # a builds again, under the suspects' lock ...
    a.unlink()  # ... and is done before b looks
    assert _suspects(b, "41-x") == ["a", "b"]  # b was not alone: it is built again too


def test_an_env_built_alone_when_its_process_died_is_the_one_suspect(tmp_path: Path) -> None:
    builds = tmp_path / "kit-env-builds"
    builds.mkdir()
    (builds / "a").write_text("41-x building")
    (builds / "b").write_text("40-w building")  # an earlier death's, judged already
    (builds / "c").write_text("42-y waiting")
    assert _suspects(builds / "a", "41-x") == ["a"]
