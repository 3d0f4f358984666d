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

**Checks.** ``%checks MODULE`` names a module of hidden checks (its ``CHECKS``:
exercise number to a function of the notebook's namespace). After an exercise
cell (or its solution) runs, its check runs: it prints what passed, or stops
with what is wrong and a hint, never the answer. The checks live in the
module, not in the notebook, so nothing in the notebook gives them away.

**Where things run and go.** :func:`cluster` is the class cluster when the
teacher set ``KIT_CLASS_CLUSTER`` (a scheduler's address, or a YAML file with a
``parallel`` section), else two local workers; :func:`my_folder` is a folder of
the attendee's own under ``runs/`` (their user name and notebook), so
attendees sharing one server never collide or read each other's results.

Examples
--------
>>> blanks("x = ...  # your code here\ny = 2\ndef f():\n    ...\n")
[1, 4]
>>> blanks("x = 1")
[]
"""

from __future__ import annotations

import ast
import importlib
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The attendee's folder, runs/<user>/<notebook>: the Experiment's default folder too.
from kit.history import user_folder as my_folder

__all__ = [
    "CLASS_CLUSTER_ENV",
    "CheckFailed",
    "ExerciseFailed",
    "ExerciseNotDone",
    "Hint",
    "blanks",
    "cluster",
    "in_class",
    "load_ipython_extension",
    "my_folder",
    "solutions_mode",
]

#: Set to 1 to run every solution and skip the exercises (``make test`` does).
SOLUTIONS_ENV = "KIT_WORKSHOP_SOLUTIONS"
#: The class cluster: a scheduler's address, or a YAML file with a ``parallel`` section.
CLASS_CLUSTER_ENV = "KIT_CLASS_CLUSTER"
#: Without a class cluster: small, so thirty of them would still fit a server.
LOCAL_CLUSTER: dict[str, Any] = {
    "env": "local",
    "n_workers": 2,
    "options": {"threads_per_worker": 1},
}

#: A check: the notebook's namespace in, what it checked out (short phrases); raises Hint.
Check = Callable[[Mapping[str, Any]], list[str]]


def cluster() -> dict[str, Any]:
    """Return the ``parallel`` section the workshop's runs use.

    The class cluster when ``KIT_CLASS_CLUSTER`` names one (the teacher sets it
    for every attendee, e.g. in JupyterHub's ``Spawner.environment``): a
    scheduler's address, or the path of a YAML file whose ``parallel`` section
    reaches it (for TLS). Else two local workers of one thread each.

    Examples
    --------
    >>> import os
    >>> os.environ.pop(CLASS_CLUSTER_ENV, None) and None
    >>> cluster()["env"]
    'local'
    >>> os.environ[CLASS_CLUSTER_ENV] = "tcp://127.0.0.1:8786"
    >>> cluster()
    {'env': 'remote', 'address': 'tcp://127.0.0.1:8786'}
    >>> del os.environ[CLASS_CLUSTER_ENV]
    """
    value = os.environ.get(CLASS_CLUSTER_ENV, "").strip()
    if not value:
        return dict(LOCAL_CLUSTER)
    if "://" in value:
        return {"env": "remote", "address": value}
    path = Path(value).expanduser()
    if not path.is_file():
        raise ValueError(
            f"{CLASS_CLUSTER_ENV}={value!r} is neither a scheduler address (tcp://HOST:PORT, "
            f"tls://HOST:PORT) nor a YAML file: ask the teacher for the class cluster's line"
        )
    from omegaconf import OmegaConf

    loaded = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    section = loaded.get("parallel", loaded) if isinstance(loaded, dict) else None
    if not isinstance(section, dict):
        raise ValueError(f"{path}: expected a `parallel:` section (env, address, security)")
    return {str(k): v for k, v in section.items()}


def in_class(cfg: Any) -> Any:
    """Return ``cfg`` to run on the class cluster when ``KIT_CLASS_CLUSTER`` names one.

    Its ``parallel`` section becomes :func:`cluster`'s, so a notebook whose
    config starts a cluster of its own (the decoding check's) runs on the
    class's instead of starting one per attendee. Without a class cluster,
    ``cfg`` is returned as it is. The class's workers read the files the
    config names (a corpus): give them as absolute paths the workers can read.

    Examples
    --------
    >>> import os, kit
    >>> cfg = kit.load_config({"parallel": {"env": "local", "n_workers": 4}})
    >>> in_class(cfg) is cfg  # no class cluster set
    True
    >>> os.environ[CLASS_CLUSTER_ENV] = "tcp://10.0.0.5:8786"
    >>> there = in_class(cfg).parallel
    >>> there.env, there.address
    ('remote', 'tcp://10.0.0.5:8786')
    >>> del os.environ[CLASS_CLUSTER_ENV]
    """
    if not os.environ.get(CLASS_CLUSTER_ENV, "").strip():
        return cfg
    from omegaconf import OmegaConf

    from kit.config import load_config

    edited = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(edited, dict)
    return load_config({**{str(k): v for k, v in edited.items()}, "parallel": cluster()})


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


class Hint(Exception):
    """What a check found wrong, and a hint to fix it (never the answer)."""

    def __init__(self, wrong: str, hint: str) -> None:
        self.wrong, self.hint = wrong, hint
        super().__init__(f"{wrong}\nHint: {hint}")


class CheckFailed(Exception):
    """An exercise ran but its check found something wrong; the message says what."""

    def __init__(self, number: str, found: Hint) -> None:
        self.number, self.found = number, found
        super().__init__(f"Exercise {number} is not right yet: {found}")

    def _render_traceback_(self) -> list[str]:
        # The check's own traceback would show its code, which gives the answer away.
        return [f"\x1b[31mCheckFailed\x1b[0m: {self}"]


class ExerciseFailed(Exception):
    """An exercise's (or a solution's) code raised; its traceback is already shown above."""

    def __init__(self, number: str, cell: str = "exercise") -> None:
        super().__init__(f"{cell} {number} raised an error: see its traceback above")

    def _render_traceback_(self) -> list[str]:
        # One line: the traceback of the attendee's own code is what helps, and it is shown.
        return [f"\x1b[31mExerciseFailed\x1b[0m: {self}"]


@dataclass
class Workshop:
    """Which exercises this kernel finished; the magics' only state."""

    shell: Any
    finished: set[str] = field(default_factory=set)
    #: The hidden checks by exercise number (``%checks MODULE`` loads them).
    checks: dict[str, Check] = field(default_factory=dict)

    def load_checks(self, line: str) -> None:
        """Load ``%checks MODULE``'s ``CHECKS``, to run after each exercise."""
        name = line.strip()
        module = importlib.import_module(name)
        found = getattr(module, "CHECKS", None)
        if not isinstance(found, Mapping):
            raise ValueError(f"{name} has no CHECKS dict (exercise number -> check function)")
        self.checks = {str(k): v for k, v in found.items()}

    def check(self, number: str) -> None:
        """Run exercise ``number``'s check, if there is one: print what passed, or stop."""
        found = self.checks.get(number)
        if found is None:
            return
        try:
            passed = found(self.shell.user_ns)
        except Hint as wrong:
            tell_class(number, wrong.wrong.splitlines()[0][:200] or "not right yet")
            raise CheckFailed(number, wrong) from None
        tell_class(number, "passed")
        print(f"\u2714 Exercise {number} passes its checks: {', '.join(passed)}.")

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
        self.check(number)

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
        if not self.shell.run_cell(cell).success:
            raise ExerciseFailed(number, "solution")  # Run All stops here, not three cells on
        self.check(number)


def tell_class(number: str, outcome: str) -> None:
    """Put this attendee's check outcome on the class's board, when a class cluster is set.

    On the class cluster's scheduler (its ledger), where the teacher's board
    reads it; best effort: an attendee's check never fails for the board.
    """
    if not os.environ.get(CLASS_CLUSTER_ENV, "").strip():
        return
    import contextlib

    from kit.cluster import get_session, note_check

    with contextlib.suppress(Exception):
        note_check(get_session(cluster()).client, number, outcome)


def _number(line: str, magic: str) -> str:
    number = line.strip()
    if not number or " " in number:
        raise ValueError(
            f"%%{magic} needs the exercise number on its first line, e.g. `%%{magic} 1`"
            f" (got {line.strip()!r})"
        )
    return number


def load_ipython_extension(shell: Any) -> None:
    """Register ``%%exercise``, ``%%solution`` and ``%checks`` (by ``%load_ext``)."""
    workshop = Workshop(shell)
    shell.register_magic_function(workshop.exercise, "cell", "exercise")
    shell.register_magic_function(workshop.solution, "cell", "solution")
    shell.register_magic_function(workshop.load_checks, "line", "checks")
    shell.user_ns["_kit_workshop"] = workshop
