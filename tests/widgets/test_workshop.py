"""The workshop magics in a real IPython shell: blanks stop clearly, solutions never clobber."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kit.widgets.workshop import ExerciseFailed, ExerciseNotDone, Workshop

InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("KIT_WORKSHOP_SOLUTIONS", raising=False)
    ipython = InteractiveShell.instance()
    ipython.run_line_magic("load_ext", "kit.widgets.workshop")
    ipython.user_ns.pop("double", None)
    yield ipython
    ipython.user_ns["_kit_workshop"].finished.clear()
    ipython.user_ns["_kit_workshop"].checks.clear()


def workshop(shell: Any) -> Workshop:
    found: Workshop = shell.user_ns["_kit_workshop"]
    return found


def test_a_blank_stops_the_cell_and_names_its_line(shell: Any) -> None:
    cell = "def double(x):\n    return ...  # your code here\n"
    with pytest.raises(ExerciseNotDone) as info:
        workshop(shell).exercise("1", cell)
    assert "Exercise 1 has 1 blank left" in str(info.value)
    assert "line 3: return ...  # your code here" in str(info.value)  # the magic is line 1
    assert "double" not in shell.user_ns  # nothing of the cell ran
    assert info.value._render_traceback_()[0].endswith(str(info.value))  # no long traceback


def test_a_filled_exercise_runs_and_its_solution_then_stays_out_of_the_way(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    workshop(shell).exercise("1", "def double(x):\n    return x + x\n")
    assert shell.user_ns["double"](4) == 8
    workshop(shell).solution("1", "def double(x):\n    return 2 * x\nsolved = True\n")
    assert "solved" not in shell.user_ns
    assert "You finished exercise 1 yourself" in capsys.readouterr().out
    workshop(shell).solution("1 --force", "solved = True\n")
    assert shell.user_ns.pop("solved") is True


def test_a_solution_runs_for_an_exercise_left_blank(shell: Any) -> None:
    with pytest.raises(ExerciseNotDone):
        workshop(shell).exercise("2", "x = ...\n")
    workshop(shell).solution("2", "x = 2\n")
    assert shell.user_ns.pop("x") == 2


def test_an_error_in_the_attendees_code_stops_run_all(shell: Any) -> None:
    with pytest.raises(ExerciseFailed, match="exercise 3 raised an error: see its traceback"):
        workshop(shell).exercise("3", "1 / 0\n")
    assert "3" not in workshop(shell).finished


def test_a_solution_that_raises_stops_run_all_there(shell: Any) -> None:
    with pytest.raises(ExerciseFailed, match="solution 4 raised an error: see its traceback"):
        workshop(shell).solution("4", "1 / 0\n")


def test_the_solutions_switch_skips_exercises_and_runs_solutions(
    shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KIT_WORKSHOP_SOLUTIONS", "1")
    workshop(shell).exercise("1", "x = ...\n")
    assert "exercise 1 skipped, its solution runs below" in capsys.readouterr().out
    workshop(shell).solution("1", "x = 3\n")
    assert shell.user_ns.pop("x") == 3


def test_a_magic_without_its_number_says_how_to_write_it(shell: Any) -> None:
    with pytest.raises(ValueError, match=r"needs the exercise number .* e\.g\. `%%exercise 1`"):
        workshop(shell).exercise("", "x = 1\n")
