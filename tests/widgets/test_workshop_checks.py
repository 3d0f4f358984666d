"""The workshop's hidden checks on right and wrong answers, as an attendee would write them.

The answers are notebook 04's own solution cells, and variants of them with the
mistakes attendees make; the checks run inline here (the notebook's test runs
them on its cluster).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kit.widgets.workshop import CheckFailed, Workshop, cluster, my_folder

InteractiveShell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell
nbformat = pytest.importorskip("nbformat")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "04_workshop.ipynb"
SETUP = (
    "import kit\n"
    "from kit import EnvironmentProvider, Runner\n"
    "cfg = kit.load_config({'words': ['the', 'cat', 'sat', 'on', 'mat'],"
    " 'sentences': ['the cat sat on the mat', 'a dog ran', 'the dog sat']})\n"
    "cluster = None\n"  # inline: the checks run where the notebook's runs go
)


def solution(number: int) -> str:
    """Notebook 04's solution cell ``number``, without its magic line."""
    book = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c.source for c in book.cells if c.source.startswith(f"%%solution {number}"))
    return cell.split("\n", 1)[1]


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("KIT_WORKSHOP_SOLUTIONS", raising=False)
    ipython = InteractiveShell.instance()
    ipython.run_line_magic("load_ext", "kit.widgets.workshop")
    ipython.run_line_magic("checks", "kit.widgets.workshop_checks")
    assert ipython.run_cell(SETUP).success
    yield ipython
    ipython.user_ns["_kit_workshop"].finished.clear()
    ipython.user_ns["_kit_workshop"].checks.clear()


def attempt(shell: Any, number: int, code: str) -> str:
    """Run ``code`` as exercise ``number``; return what its check said."""
    workshop: Workshop = shell.user_ns["_kit_workshop"]
    try:
        workshop.exercise(str(number), code)
    except CheckFailed as failed:
        return str(failed)
    return "passed"


def test_the_notebooks_solutions_pass_their_checks(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    for number in (1, 2, 3):
        assert attempt(shell, number, solution(number)) == "passed"
    out = capsys.readouterr().out
    assert "✔ Exercise 1 passes its checks: the env, the worker setup" in out
    assert "✔ Exercise 3 passes its checks: the failed indices" in out


def test_a_worker_setup_called_instead_of_returned_fails_with_a_hint(shell: Any) -> None:
    """The wrong answer to exercise 1 that a run inline never executes."""
    wrong = (
        solution(1)
        .replace("return lambda: {", "return (lambda: {")
        .replace('"sentences": sentences}', '"sentences": sentences})()')
    )
    said = attempt(shell, 1, wrong)
    assert said.startswith("Exercise 1 is not right yet: make_worker_setup_fn returned a dict (")
    assert "Hint: return a function that builds the env when a worker calls it" in said
    assert "lambda: {" not in said  # a hint, never the answer


def test_a_count_of_the_wrong_thing_names_the_sentence_and_what_came_back(shell: Any) -> None:
    wrong = solution(1).replace('"words": len(words)', '"words": len(sentences)')
    said = attempt(shell, 1, wrong)
    assert "CountKnown.forward(0, ...) for 'red fish blue fish'" in said
    assert "'words': 3" in said  # what the attendee's code gave
    assert "Hint: return a dict with 'sentence'" in said


def test_a_summary_that_averages_the_items_shares_gets_the_hint_about_words(
    shell: Any,
) -> None:
    assert attempt(shell, 1, solution(1)) == "passed"
    wrong = solution(2).replace(
        'sum(r["known"] for r in done) / sum(r["words"] for r in done)',
        'sum(r["metrics"]["known_share"] for r in done) / len(done)',
    )
    said = attempt(shell, 2, wrong)
    assert "Hint: that is the mean of the sentences' shares" in said


def test_a_summary_that_trips_on_a_failed_item_says_to_skip_none(shell: Any) -> None:
    assert attempt(shell, 1, solution(1)) == "passed"
    wrong = solution(2).replace("done = [r for r in records if r is not None]", "done = records")
    said = attempt(shell, 2, wrong)
    assert "summarize raised TypeError on records with a failed item (None)" in said
    assert "Hint: skip the None records" in said


def test_printing_instead_of_keeping_the_failed_indices_gets_a_hint(shell: Any) -> None:
    for number in (1, 2):
        assert attempt(shell, number, solution(number)) == "passed"
    wrong = solution(3).replace("failed = result.failed_indices", "failed = len(result.errors)")
    said = attempt(shell, 3, wrong)
    assert "`failed` is 1" in said and "Hint: the result knows which item indices failed" in said


def test_the_class_cluster_comes_from_the_teachers_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KIT_CLASS_CLUSTER", raising=False)
    assert cluster()["env"] == "local"
    line = tmp_path / "class.yaml"
    line.write_text("parallel:\n  env: remote\n  address: tls://10.0.0.5:8786\n")
    monkeypatch.setenv("KIT_CLASS_CLUSTER", str(line))
    assert cluster() == {"env": "remote", "address": "tls://10.0.0.5:8786"}
    monkeypatch.setenv("KIT_CLASS_CLUSTER", "10.0.0.5:8786")
    with pytest.raises(ValueError, match=r"neither a scheduler address .* nor a YAML file"):
        cluster()


def test_each_attendee_and_notebook_copy_gets_a_folder_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/x/notebooks/04_workshop-bo.ipynb")
    monkeypatch.setenv("JUPYTERHUB_USER", "ana")
    ana = my_folder()
    monkeypatch.setenv("JUPYTERHUB_USER", "bo")
    assert (ana.as_posix(), my_folder().as_posix()) == (
        "runs/ana/04_workshop-bo",
        "runs/bo/04_workshop-bo",
    )
    monkeypatch.setenv("JUPYTERHUB_USER", "..")
    assert my_folder().parts[:2] == ("runs", "_")  # never a way out of runs/


def exercise(number: int) -> str:
    """Notebook 04's exercise cell ``number``, without its magic line."""
    book = nbformat.read(NOTEBOOK, as_version=4)
    cell = next(c.source for c in book.cells if c.source.startswith(f"%%exercise {number}"))
    return cell.split("\n", 1)[1]


def answers(number: int) -> tuple[set[str], set[str]]:
    """What solution ``number`` fills the blanks with: its code, and the values new in it."""
    import ast

    given = exercise(number)
    code, values = set(), set()
    for line in solution(number).splitlines():
        line = line.strip()
        if not line or line in given.replace("  # your code here", ""):
            continue
        # The answer: what follows `return` or the first `=` of the line that filled a blank.
        filled = line.removeprefix("return ").split(" = ", 1)[-1].rstrip(",")
        code.add(filled.replace(" ", ""))
        for node in ast.walk(ast.parse(line.removeprefix("return ").strip(), mode="exec")):
            # Its parts too: a check holding `sum(w in vocabulary for w in words)` gives it away.
            if isinstance(node, ast.Call | ast.BinOp | ast.GeneratorExp | ast.Lambda):
                part = ast.unparse(node).replace(" ", "").replace("'", '"')
                if len(part) >= 12 and part not in given.replace(" ", ""):
                    code.add(part)
            if not isinstance(node, ast.Constant) or str(node.value) in given:
                continue
            if not (node.value is None or isinstance(node.value, bool) or len(str(node.value)) < 3):
                values.add(str(node.value))
    return code, values


def test_the_checks_hold_no_solutions_code_or_value() -> None:
    # Anyone can read the shipped check module (inspect.getsource, site-packages): it must
    # give no answer to copy. Its pickles and messages are drawn from it, so they are read too.
    import cloudpickle

    from kit.widgets import workshop_checks

    source = Path(workshop_checks.__file__).read_text()
    flat = source.replace(" ", "").replace("'", '"')
    shipped = flat + cloudpickle.dumps(workshop_checks.CHECKS).hex()
    found = []
    for number in (1, 2, 3, 4):
        code, values = answers(number)
        assert code, f"no answer found in solution {number}: the notebook changed?"
        found += [f"solution {number}'s code {c!r}" for c in code if c in shipped]
        found += [f"solution {number}'s value {v!r}" for v in values if v in source]
    # The values right code gives on the checks' own sentences: counts, shares, failed items.
    for value in ("[2, 1, 1]", "[4, 1, 6]", "0.36363636", "0.1666666", "failed_indices"):
        if value in source:
            found.append(f"the expected value {value!r}")
    assert found == []
