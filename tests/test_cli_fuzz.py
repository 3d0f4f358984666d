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
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kit.cli import EXIT_CODES, main

UNEXPECTED = "(`kit --debug ...` shows the traceback)"

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
COMMANDS = [["config", "show"], ["run"], ["sweep"], ["run", "-m"], ["cluster", "script"]]


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
    assert code in EXIT_CODES, where
    assert "Traceback" not in err, where
    # Bad input is named, never an "unexpected error" (a Python exception's name and text).
    assert UNEXPECTED not in err, where
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
        if command in (["run"], ["sweep"], ["run", "-m"]):
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


SWEEP_JOB = (
    "provider: {_target_: tests.workloads.KeyedProvider}\n"
    "runner: {_target_: tests.workloads.Quadratic, chunk_size: 2}\n"
    "items: {start: 0, stop: 2}\nfactor: 2\nx: 0.0\nsleep: 0.0\n"
    "parallel: {env: inline}\n"
)
#: Bad sweeps and sweep options, each of a kind that once escaped as an unexpected error.
BAD_SWEEPS = [
    ["x=choice(choice(1,2),3)"],
    ["x=range(0,2),range(0,3)"],
    ["x=range(0,2,0)"],
    ["x=interval(0,inf)", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=interval(nan,1)", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=range(0,2,0)", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=range(0,10000000)", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=interval(0,1)", "--search", "optuna", "--trials", "0", "--metric", "loss"],
    ["x=interval(0,1)", "--search", "optuna", "--trials", "-3", "--metric", "loss"],
    ["x=interval(0,1)", "--search", "optuna", "--trials", "many", "--metric", "loss"],
    ["x=0,1", "--concurrency", "0"],
    ["x=0,1", "--concurrency", "-1"],
    ["x=0,1", "-o", "{file}"],
    ["x=0,1", "--trials", "3"],
    ["x=0,1", "--maximize", "--direction", "minimize", "--metric", "loss"],
    ["x=interval(0,1)"],
    ["x=interval(1,0)", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=tag(log, interval(0,1))", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=1", "--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["x=0,1", "x=2,3"],
    ["~x=0,1"],
    ["x=glob(*)"],
    ["x=0,1", "--search", "optuna", "--trials", "2"],
]


@pytest.mark.parametrize("command", [["sweep"], ["run", "-m"]])
def test_bad_sweeps_and_options_are_usage_errors_never_unexpected(
    tmp_path: Path, command: list[str]
) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(SWEEP_JOB + f"log_dir: {tmp_path}\n")
    for n, extra in enumerate(BAD_SWEEPS):
        extra = [arg.replace("{file}", str(config)) for arg in extra]
        argv = [
            *command,
            str(config),
            *extra,
            *(["-o", str(tmp_path / str(n))] * ("-o" not in extra)),
        ]
        code, err, _ = kit(argv)
        where = f"kit {' '.join(argv)!r}:\n{err}"
        assert code == 2, where
        assert "Traceback" not in err and UNEXPECTED not in err, where
        assert err.strip(), where


PIECES = ["1", "0", "-1", "2.5", "inf", "nan", "a", "'1'", "false", "null", "[1,2]", "{b: 1}"]
SWEEPS = [
    "choice({})",
    "range(0,3)",
    "range(0,2,0)",
    "range(3,0)",
    "interval(0,1)",
    "interval({},{})",
    "tag(log, interval({},1))",
    "int(interval(0,{}))",
    "shuffle({})",
    "sort({})",
    "glob(*)",
    "{}",
]
OPTIONS = [
    [],
    ["--search", "optuna", "--trials", "2", "--metric", "loss"],
    ["--search", "optuna", "--trials", "1", "--metric", "nope", "--prune", "median"],
    ["--metric", "loss"],
    ["--metric", "nope", "--maximize"],
    ["--concurrency", "1"],
]


@st.composite
def sweep_lines(draw: st.DrawFn) -> list[str]:
    """Command lines of Hydra's sweep grammar, nested and combined at random."""
    lines = []
    for key in draw(
        st.lists(st.sampled_from(["x", "+y", "~x", "factor", "items.stop"]), min_size=1, max_size=3)
    ):
        parts = []
        for _ in range(draw(st.integers(1, 3))):
            form = draw(st.sampled_from(SWEEPS))
            fill = [draw(st.sampled_from(PIECES)) for _ in range(form.count("{}"))]
            parts.append(form.format(*fill))
        lines.append(f"{key}={','.join(parts)}")
    return [*lines, *draw(st.sampled_from(OPTIONS))]


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(line=sweep_lines(), multirun=st.booleans())
@example(line=["x=shuffle(1)", "x=shuffle(1)"], multirun=False)  # found in a loaded run
@example(line=["items.stop=choice('1')"], multirun=False)  # a quoted bound; found in a run
def test_generated_sweep_command_lines_never_reach_an_unexpected_error(
    tmp_path_factory: pytest.TempPathFactory, line: list[str], multirun: bool
) -> None:
    folder = tmp_path_factory.mktemp("sweep")
    config = folder / "job.yaml"
    config.write_text(SWEEP_JOB + f"log_dir: {folder}\n")
    command = ["run", "-m"] if multirun else ["sweep"]
    code, err, _ = kit([*command, str(config), *line, "-o", str(folder / "out")])
    where = f"kit {' '.join(line)!r}:\n{err}"
    assert code in EXIT_CODES, where
    assert "Traceback" not in err and UNEXPECTED not in err, where
