"""The ``kit`` command line on bad input: a clear one-line error, never a traceback or a hang.

A fixed corpus of the classes of bad input (malformed, binary and mis-encoded
YAML, huge files, alias bombs, wrong types, unknown keys, bad overrides and
sweeps, missing, dangling and looping paths, directories, pipes, ``_target_``
at nothing, bad ``items``, bogus run directories), crossed with commands and
overrides, plus generated text. ``kit.cli.main`` runs in this process so a
thousand cases take seconds; the installed script is the same function.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.cli import main

TARGETS = "provider: {_target_: tests.workloads.ToyProvider}\nfactor: 2\n"
JOB = TARGETS + "runner: {_target_: tests.workloads.Affine}\n"

TEXTS: dict[str, str | bytes] = {
    "unclosed_list": "a: [1, 2",
    "unclosed_map": "a: {b: 1",
    "colon_dash": ":\n-",
    "top_level_list": "- 1\n- 2\n",
    "duplicate_key": "a: 1\na: 2\n",
    "tab_indent": "a:\n\tb: 1\n",
    "python_tag": "a: !!python/object/apply:os.system ['true']\n",
    "dangling_interpolation": "a: ${b}\n",
    "missing_env": "a: ${oc.env:KIT_FUZZ_NOPE}\n",
    "defaults_missing": "defaults:\n  - nothere\n",
    "defaults_number": "defaults: 3\n",
    "defaults_self": "defaults:\n  - self_including\n",
    "parallel_number": "parallel: 3\n",
    "parallel_env_typo": "parallel:\n  env: slurmm\n",
    "negative_workers": "parallel:\n  n_workers: -1\n",
    "workers_text": "parallel:\n  n_workers: many\n",
    "unknown_parallel_key": "parallel:\n  n_worker: 2\n",
    "target_nothing": JOB.replace("tests.workloads.Affine", "nothing.here") + "items: {stop: 3}\n",
    "target_module": JOB.replace("tests.workloads.Affine", "os") + "items: {stop: 3}\n",
    "target_wrong_class": JOB.replace("ToyProvider", "Affine") + "items: {stop: 3}\n",
    "items_text": JOB + "items: {stop: x}\n",
    "items_missing_file": JOB + "items: {file: /nonexistent/ids.txt}\n",
    "items_step_zero": JOB + "items: {start: 5, stop: 1, step: 0}\n",
    "items_unknown_key": JOB + "items: {stopp: 3}\n",
    "chunk_size_negative": JOB.replace("Affine}", "Affine, chunk_size: -3}") + "items: {stop: 3}\n",
    "runner_typo": JOB.replace("Affine}", "Affine, retry: 3}") + "items: {stop: 3}\n",
    "output_dir_number": JOB + "items: {stop: 3}\noutput_dir: 3\n",
    "huge_float": "a: 1e999\n",
    "complex_key": "? [a]\n: b\n",
    "self_alias": "a: &x [*x]\n",
    "bom": "\ufeffa: 1\n",
    "nul": "a: 1\x00\n",
    "alias_bomb": "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdef", "bcdefg", strict=True)
    ),
    "huge": "k: " + "v" * (1 << 20) + "\n",
    "binary": bytes(range(256)) * 8,
    "latin1": "name: caf\xe9\n".encode("latin-1"),
    "utf16": "a: 1\n".encode("utf-16"),
    "empty": "",
}
OVERRIDES = [
    "",
    "a=",
    "=1",
    "a",
    "a.b.c=1",
    "+a=1",
    "++a=1",
    "~a",
    "~nothere",
    "a=[1,",
    "a={b:",
    "a=1,2,3",
    "parallel.env=slurmm",
    "+parallel.n_workers=-2",
    "a=${",
    "+a=${nothere}",
    "+parallel.address=not-a-url",
    "+items.stop=abc",
    "+runner.retries=x",
    "+a=\x00",
    "é=1",
    "a b=1",
    "+a=1=2",
    "a=range(1,10)",
    "+a=glob(*)",
]
COMMANDS = [["config", "show"], ["run"], ["sweep"], ["cluster", "script"]]


def kit(argv: list[str]) -> tuple[object, str, float]:
    """Run the CLI in this process: (exit code, stderr, seconds)."""
    err = io.StringIO()
    began = time.monotonic()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code: object = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    return code, err.getvalue(), time.monotonic() - began


def check(argv: list[str], names: list[str]) -> None:
    code, err, seconds = kit(argv)
    where = f"kit {' '.join(argv)!r}:\n{err}"
    assert code in (0, 1, 2), where
    assert "Traceback" not in err, where
    assert seconds < 10, f"{where}\ntook {seconds:.1f} s"
    if code != 0:
        # The message names the file, a key (full_key), the argument or the usage.
        assert (
            any(name and name in err for name in names)
            or "full_key:" in err
            or ("usage: kit" in err)
        ), where


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fuzz")
    paths: dict[str, Path] = {}
    for name, text in TEXTS.items():
        path = folder / f"{name}.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        paths[name] = path
    (folder / "self_including.yaml").write_text("defaults:\n  - self_including\n")
    (folder / "directory.yaml").mkdir()
    paths["directory"] = folder / "directory.yaml"
    os.mkfifo(folder / "pipe.yaml")
    paths["pipe"] = folder / "pipe.yaml"
    (folder / "loop_a.yaml").symlink_to(folder / "loop_b.yaml")
    (folder / "loop_b.yaml").symlink_to(folder / "loop_a.yaml")
    paths["loop"] = folder / "loop_a.yaml"
    (folder / "dangling.yaml").symlink_to(folder / "gone.yaml")
    paths["dangling"] = folder / "dangling.yaml"
    paths["missing"] = folder / "missing.yaml"
    paths["long_name"] = folder / ("x" * 300 + ".yaml")
    return paths


def test_the_corpus_crossed_with_commands_and_overrides(corpus: dict[str, Path]) -> None:
    cases = 0
    for path, command, override in itertools.product(corpus.values(), COMMANDS, OVERRIDES):
        extra = [override] if override else []
        if command in (["run"], ["sweep"]):
            extra.append("+parallel.env=inline")  # never start a cluster for a fuzz case
        key = override.lstrip("+~").split("=")[0]
        check([*command, str(path), *extra], [str(path), path.name, key, repr(override)])
        cases += 1
    assert cases >= 1000


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "/nonexistent/run"],
        ["status", "/"],
        ["cancel", "/nonexistent/run"],
        ["report", "/nonexistent/run"],
        ["config", "diff", "/nonexistent/a.yaml", "/nonexistent/b.yaml"],
        ["run"],
        ["frobnicate"],
        ["--debug"],
    ],
)
def test_bogus_arguments(argv: list[str]) -> None:
    check(argv, [a for a in argv if a.startswith("/")])


def test_a_file_that_is_not_a_run_directory(corpus: dict[str, Path]) -> None:
    for command in ("status", "cancel", "report"):
        check([command, str(corpus["empty"])], [str(corpus["empty"])])


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    text=st.text(max_size=200),
    override=st.text(max_size=30).filter(lambda s: not s.startswith("-")),
)
def test_generated_yaml_and_overrides(tmp_path: Path, text: str, override: str) -> None:
    path = tmp_path / "generated.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    key = override.lstrip("+~").split("=")[0]
    check(["config", "show", str(path), override], [str(path), key, repr(override)])
