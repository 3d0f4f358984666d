"""An env's code fingerprint: equal for equal code in any process, different for other code."""

from __future__ import annotations

import copy
import functools
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit._base.fingerprint import code_fingerprint
from kit.examples.quickstart import ModelProvider

#: A notebook's provider, as a script: where it sits in the file must not matter.
NOTEBOOK = """
import sys
from kit import EnvironmentProvider
from kit._base.fingerprint import code_fingerprint

scale = {scale}
vowels = {{"a", "e", "i", "o", "u"}}


def helper(x):
    return scale * x if x in vowels else x


class Vocabulary(EnvironmentProvider):
    def build_env_local(self):
        return {{"f": helper}}

    def make_worker_setup_fn(self):
        return lambda: {{"f": helper, "n": len(self.config)}}


print(code_fingerprint(Vocabulary))
"""


def fingerprint_in_a_process(tmp_path: Path, scale: int, blank_lines: int, seed: str) -> str:
    script = tmp_path / f"nb-{scale}-{blank_lines}-{seed}.py"
    script.write_text("\n" * blank_lines + NOTEBOOK.format(scale=scale))
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    return out.stdout.strip()


def test_one_class_defined_alike_in_two_processes_has_one_fingerprint(tmp_path: Path) -> None:
    # Other files, other lines, other hash seeds (a set constant's order moves with them).
    first = fingerprint_in_a_process(tmp_path, scale=2, blank_lines=0, seed="1")
    assert first == fingerprint_in_a_process(tmp_path, scale=2, blank_lines=7, seed="2")


def test_a_global_the_code_reads_is_part_of_the_fingerprint(tmp_path: Path) -> None:
    assert fingerprint_in_a_process(tmp_path, 2, 0, "1") != fingerprint_in_a_process(
        tmp_path, 3, 0, "1"
    )


def test_a_class_named_like_another_with_other_code_has_another_fingerprint() -> None:
    class Spoof(ModelProvider):
        __qualname__ = "ModelProvider"

        def build_env_local(self):  # type: ignore[no-untyped-def]
            return {"model": lambda x: -999.0}

    Spoof.__module__ = ModelProvider.__module__
    assert code_fingerprint(Spoof) != code_fingerprint(ModelProvider)


def test_copying_or_pickling_an_instance_keeps_the_fingerprint() -> None:
    # copy and pickle cache __slotnames__ on the class at their first use.
    provider = ModelProvider({"model": {"coefficients": [1.0], "work_seconds": 0.0}})
    before = code_fingerprint(ModelProvider)
    copy.copy(provider)
    pickle.dumps(provider)
    assert code_fingerprint(ModelProvider) == before


def test_code_that_refers_to_itself_is_fingerprinted() -> None:
    def countdown(n: int) -> int:
        return 0 if n == 0 else countdown(n - 1)

    class Base:
        def f(self) -> int:
            return 1

    class Child(Base):
        def f(self) -> int:
            return super().f() + 1  # the __class__ cell holds Child itself

    assert code_fingerprint(countdown) == code_fingerprint(countdown)
    assert code_fingerprint(Child) != code_fingerprint(Base)


def test_a_value_that_does_not_pickle_is_never_equal_across_processes(tmp_path: Path) -> None:
    script = tmp_path / "lock.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading
            from kit._base.fingerprint import code_fingerprint
            lock = threading.Lock()
            def guarded():
                return lock
            print(code_fingerprint(guarded) == code_fingerprint(guarded), code_fingerprint(guarded))
            """
        )
    )
    runs = [
        subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    (same_1, digest_1), (same_2, digest_2) = (run.stdout.split() for run in runs)
    assert (same_1, same_2) == ("True", "True")  # stable within a process
    assert digest_1 != digest_2  # never shared between two


def test_python_s_own_modules_and_the_users_are_told_apart_without_listing_every_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listing which distribution holds each module reads every installed one's file list:
    # 0.7 s of CPU in each kernel's first run; sixty kernels starting a class waited 15 s.
    import importlib.metadata

    from kit._base import fingerprint

    def listed() -> None:
        raise AssertionError("every distribution's file list was read")

    monkeypatch.setattr(importlib.metadata, "packages_distributions", listed)
    fingerprint._distributions.cache_clear()
    (tmp_path / "helpers_of_mine.py").write_text("def tokens(s):\n    return s.split()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import helpers_of_mine  # type: ignore[import-not-found]

    before = code_fingerprint(functools.partial(json.dumps, helpers_of_mine.tokens))
    (tmp_path / "helpers_of_mine.py").write_text("def tokens(s):\n    return s.split(',')\n")
    os.utime(tmp_path / "helpers_of_mine.py", ns=(1, 1))  # another mtime, whatever the clock
    assert code_fingerprint(functools.partial(json.dumps, helpers_of_mine.tokens)) != before
