r"""Exercises with blanks for workshop notebooks: ``%%exercise`` and ``%%solution`` cells.

Load it in a notebook with ``%load_ext kit.widgets.workshop``. An exercise cell holds
code with blanks (``...``, usually followed by ``# your code here``)::

    %%exercise 1
    def double(x):
        return ...  # your code here

Running it with a blank left stops with a short message naming the blank's line
(so "Run All" stops at the first unfinished exercise) instead of failing later
with an unrelated error. Once filled in, the cell runs as plain Python. The
solution cell below it (folded) runs the model answer::

    %%solution 1
    def double(x):
        return 2 * x

A solution cell does not replace an exercise the attendee finished: it says so
and skips, unless run as ``%%solution 1 --force``. With the environment
variable ``KIT_WORKSHOP_SOLUTIONS=1`` (the notebook test sets it) exercise cells
are skipped and every solution runs, so the notebook runs top to bottom without
shipping the answers in the exercise cells.

Examples
--------
>>> blanks("x = ...  # your code here\ny = 2\ndef f():\n    ...\n")
[1, 4]
>>> blanks("x = 1")
[]
"""

from __future__ import annotations

import ast
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ExerciseFailed",
    "ExerciseNotDone",
    "blanks",
    "load_ipython_extension",
    "solutions_mode",
]

#: Set to 1 to run every solution and skip the exercises (``make test`` does).
SOLUTIONS_ENV = "KIT_WORKSHOP_SOLUTIONS"


def solutions_mode() -> bool:
    """Whether ``KIT_WORKSHOP_SOLUTIONS`` asks for the solutions to run instead of the exercises."""
    return os.environ.get(SOLUTIONS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def blanks(source: str) -> list[int]:
    """Line numbers (1-based, in ``source``) of the blanks ``...`` still in a cell.

    A blank is the Ellipsis literal anywhere in the code; a syntax error is left
    for Python to report, so this returns no blank for it.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value is Ellipsis
    }
    return sorted(lines)


class ExerciseNotDone(Exception):
    """An exercise cell still has blanks; its message says which lines."""

    def __init__(self, number: str, lines: list[int], source: str) -> None:
        self.number = number
        self.lines = lines
        code = source.splitlines()
        # Numbered as the cell shows them: the %%exercise line is line 1.
        shown = "\n".join(f"    line {n + 1}: {code[n - 1].strip()}" for n in lines)
        plural = "s" if len(lines) > 1 else ""
        super().__init__(
            f"Exercise {number} has {len(lines)} blank{plural} left (`...`):\n{shown}\n"
            f"Replace each `...` with your code and run the cell again. "
            f"Stuck? Open the solution cell below and run it."
        )

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback through the magic's machinery.
        return [f"\x1b[31mExerciseNotDone\x1b[0m: {self}"]


class ExerciseFailed(Exception):
    """The attendee's code raised; its traceback is already shown above."""

    def __init__(self, number: str) -> None:
        super().__init__(f"exercise {number} raised an error: see its traceback above")

    def _render_traceback_(self) -> list[str]:
        # One line: the traceback of the attendee's own code is what helps, and it is shown.
        return [f"\x1b[31mExerciseFailed\x1b[0m: {self}"]


@dataclass
class Workshop:
    """Which exercises this kernel finished; the magics' only state."""

    shell: Any
    finished: set[str] = field(default_factory=set)

    def exercise(self, line: str, cell: str) -> None:
        """Run an exercise cell unless it has blanks (or the solutions run instead)."""
        number = _number(line, "exercise")
        if solutions_mode():
            print(f"{SOLUTIONS_ENV} is set: exercise {number} skipped, its solution runs below.")
            return
        left = blanks(cell)
        if left:
            raise ExerciseNotDone(number, left, cell)
        if not self.shell.run_cell(cell).success:
            raise ExerciseFailed(number)
        self.finished.add(number)

    def solution(self, line: str, cell: str) -> None:
        """Run a solution cell unless the attendee finished that exercise themselves."""
        words = shlex.split(line)
        number = _number(" ".join(w for w in words if w != "--force"), "solution")
        if number in self.finished and "--force" not in words and not solutions_mode():
            print(
                f"You finished exercise {number} yourself, so the solution is not run "
                f"(it would replace your code). To run it anyway: %%solution {number} --force"
            )
            return
        self.shell.run_cell(cell)


def _number(line: str, magic: str) -> str:
    number = line.strip()
    if not number or " " in number:
        raise ValueError(
            f"%%{magic} needs the exercise number on its first line, e.g. `%%{magic} 1`"
            f" (got {line.strip()!r})"
        )
    return number


def load_ipython_extension(shell: Any) -> None:
    """Register ``%%exercise`` and ``%%solution`` (``%load_ext kit.widgets.workshop``)."""
    workshop = Workshop(shell)
    shell.register_magic_function(workshop.exercise, "cell", "exercise")
    shell.register_magic_function(workshop.solution, "cell", "solution")
    shell.user_ns["_kit_workshop"] = workshop
