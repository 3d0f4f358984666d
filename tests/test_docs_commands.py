"""Every shell command the manual prints runs as printed, or is set aside here with the reason.

The manual is the README, CONTRIBUTING.md and the pages of docs/. A command
is a line of a ``sh`` (``bash``, ``console``, ``shell``) block, or a line
after ``$ `` in any block, its ``\\`` continuations joined. Each page's
commands run in order in a scratch folder of their own, as a user types
them: Kit's venv first on ``PATH``, the examples where the pages name them
(``kit/examples/...``), the generated speech where ``decode.yaml`` reads it
(``runs/asr-data``), and the stand-ins for what the pages call the user's
own (``exp.yaml``, ``edited.yaml``, ``decode.yaml``, two Kaldi test sets).
A command exits 0, or with the code the page shows after it (``$ echo
$?``); one that runs until Ctrl-C (``UNTIL_STOPPED``) gets Ctrl-C once it
says it is up, and must then end with 0. A new command
in the manual fails here until it runs or is set aside in ``SET_ASIDE``.
Kit commands set aside are still read by Kit's own argument parser and
their files looked for: a renamed flag or file fails here too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
SHELL_BLOCKS = ("sh", "bash", "console", "shell")

#: What ``kit`` subcommand runs could not here, by how it begins, and why.
SET_ASIDE: dict[str, str] = {
    "pip install -e": "installs into the venv the suite runs in; tests/dist installs the "
    "built wheel with each extra into a fresh venv",
    "make demo": "the main job over 250 utterances, minutes a run: tests/examples/test_asr.py "
    "runs its command (python -m kit.examples.asr) on 6",
    "make test": "the suite this test is part of",
    "make check": "a part of the suite this test is part of",
    "make lab": "JupyterLab until stopped: tests/test_make_lab.py starts it",
    "make docs": "tests/test_docs.py builds the manual",
    "make screenshots": "the browser tests take them",
    "make bench": "the benchmarks take minutes a table; benchmarks/results/ keeps them",
    "make dist": "tests/dist builds the wheel",
    "make test-dist": "tests/dist installs it per extra",
    "kit check exp.yaml && kit submit exp.yaml parallel.env=slurm": "SLURM: the tests "
    "that take the slurm fixture submit to the local one",
    "kit cluster claim tcp://10.0.0.5:8786": "an example address of another machine",
}

#: Commands that run until Ctrl-C, by how they begin, and the line that says they are up:
#: each is stopped with Ctrl-C once it prints it, and must then end cleanly.
UNTIL_STOPPED: dict[str, str] = {
    "kit cluster start --class": "Ctrl-C ends the class",
}

#: The user's own files the pages name, as the scratch folder holds them.
EXP = """\
provider: {_target_: kit.examples.quickstart.ModelProvider}
runner: {_target_: kit.examples.quickstart.Evaluate}
model: {coefficients: [1.0, -2.0, 0.5], work_seconds: 0.0}
items: {start: 0, stop: 20}
lr: 0.01
parallel: {env: inline}
output_dir: runs/exp
"""


@dataclass(frozen=True)
class Command:
    page: Path
    line: int
    text: str
    #: The exit code the page shows for it (``$ echo $?``), else 0.
    expected: int = 0

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}: {self.text}"


def blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """Return each fenced block of ``text``: its info string, first line number, lines."""
    found: list[tuple[str, int, list[str]]] = []
    info: str | None = None
    first, lines = 0, list[str]()
    for number, line in enumerate(text.splitlines(), start=1):
        fence = re.match(r"\s*```(.*)$", line)
        if fence is not None and info is None:
            info, first, lines = fence.group(1).strip(), number + 1, []
        elif fence is not None:
            found.append((info or "", first, lines))
            info = None
        elif info is not None:
            lines.append(line.strip())
    return found


def commands(page: Path) -> list[Command]:
    """Return the commands ``page`` prints, in its order."""
    found: list[Command] = []
    for info, first, lines in blocks(page.read_text(encoding="utf-8")):
        prompted = any(line.startswith("$ ") for line in lines)
        if not prompted and info not in SHELL_BLOCKS:
            continue
        j = 0
        while j < len(lines):
            line, at = lines[j], first + j
            j += 1
            if prompted and not line.startswith("$ "):
                continue
            line = line.removeprefix("$ ").strip()
            while line.endswith("\\") and j < len(lines):
                line = line[:-1].rstrip() + " " + lines[j].strip()
                j += 1
            line = re.sub(r"\s+#.*$", "", line) if not line.startswith("#") else ""
            if not line:
                continue
            if line == "echo $?":  # what the command before it exits with
                shown = lines[j].strip() if j < len(lines) else ""
                if found and shown.isdecimal():
                    found[-1] = Command(found[-1].page, found[-1].line, found[-1].text, int(shown))
                continue
            found.append(Command(page, at, line))
    return found


def aside(command: Command) -> str | None:
    return next((why for start, why in SET_ASIDE.items() if command.text.startswith(start)), None)


def scratch(folder: Path, corpus: Path) -> dict[str, str]:
    """Fill ``folder`` as a user's would be; return the environment commands run with."""
    (folder / "kit").mkdir()
    (folder / "kit" / "examples").symlink_to(ROOT / "kit" / "examples")
    (folder / "runs").mkdir()
    (folder / "runs" / "asr-data").symlink_to(corpus)
    (folder / "exp.yaml").write_text(EXP)
    (folder / "edited.yaml").write_text(EXP.replace("lr: 0.01", "lr: 0.1"))
    # The teacher's own config, "a copy of Kit's kit/examples/asr/decode.yaml".
    shutil.copy(ROOT / "kit" / "examples" / "asr" / "decode.yaml", folder / "decode.yaml")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env["XDG_CONFIG_HOME"] = str(folder / ".config")  # the teacher's token goes there
    for name in ("test_clean", "test_other"):  # the two test sets the sets example names
        made = subprocess.run(
            [sys.executable, "-m", "kit.examples.asr.corpus", f"data/{name}", "--kaldi"],
            cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
    return env


def parsed_by_kit(command: Command, folder: Path) -> None:
    """Check a set-aside ``kit`` command with Kit's parser, and the files it names."""
    from kit.cli import build_parser

    for part in command.text.split("&&"):
        words = shlex.split(part)
        if not words or words[0] != "kit":
            continue
        try:
            build_parser().parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"{command}: Kit's parser refuses it")
        for word in words[1:]:
            if word.endswith((".yaml", ".yml")) and "=" not in word:
                where = folder / word
                assert where.exists() or word == "decode.yaml", f"{command}: no {word}"


def test_the_manual_prints_commands_and_sets_aside_only_what_it_says_why() -> None:
    every = [command for page in PAGES for command in commands(page)]
    assert len(every) >= 40, [str(c) for c in every]
    used = {start for start in SET_ASIDE if any(c.text.startswith(start) for c in every)}
    assert used == set(SET_ASIDE), f"set aside but no longer printed: {set(SET_ASIDE) - used}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_each_command_of_the_page_runs_as_printed(page: Path, corpus: Path, tmp_path: Path) -> None:
    printed = commands(page)
    if not printed:
        pytest.skip(f"{page.name} prints no command")
    folder, logs = tmp_path / "user", tmp_path / "logs"
    folder.mkdir()
    logs.mkdir()
    env = scratch(folder, corpus)
    groups: list[int] = []
    try:
        for number, command in enumerate(printed):
            if aside(command) is not None:
                parsed_by_kit(command, folder)
                continue
            log = logs / f"{number}.log"
            with log.open("w") as out:
                # Output to a file, not a pipe: a command's `&` child keeps its output open.
                ran = subprocess.Popen(
                    ["bash", "-c", command.text],
                    cwd=folder,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            groups.append(ran.pid)
            ready = next(
                (line for start, line in UNTIL_STOPPED.items() if command.text.startswith(start)),
                None,
            )
            if ready is not None:
                wait_for(log, ready, ran)
                os.killpg(ran.pid, signal.SIGINT)
            ran.wait(timeout=600)
            said = log.read_text(errors="replace")
            assert ran.returncode == command.expected, f"{command}\n{said[-3000:]}"
    finally:
        for group in groups:  # what a command left running in the background
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)


def wait_for(log: Path, line: str, process: subprocess.Popen[bytes]) -> None:
    """Return once ``log`` holds ``line``; fail if ``process`` ends first."""
    while line not in log.read_text(errors="replace"):
        try:
            process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"ended before it said {line!r}:\n{log.read_text(errors='replace')[-3000:]}")
