"""Sizes that show the design: few modules at ``kit``'s top, no class, function or module too big.

A family of modules has a wing (a folder) of its own, so the top holds
only the vocabulary and the entry points. A class past ``MAX_CLASS_LINES``
lines of code (its docstrings and comments not counted) is two concerns:
a widget is a model and its view (``SampleRun`` and ``RunPanel``), a run
folder's store its lock, its ledger and its begin, resume and commit
(``FolderLock``, ``Ledger``, ``RunStore``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import kit
from tests.sources import parse

ROOT = Path(kit.__file__).parent
MAX_TOP_MODULES = 15
MAX_CLASS_LINES = 250
#: A function past this is several steps: each deserves a name (``infer`` checks its
#: config in ``_checked_stage``, the dashboard builds each plot in a function of its own).
MAX_FUNCTION_LINES = 80
#: A module past this holds several concepts (the command line is one module a group).
MAX_MODULE_LINES = 500


def prose_lines(tree: ast.AST) -> set[int]:
    """The lines of every docstring in ``tree`` (a module's, a class's, a function's)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = body[0] if body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if (
                first is not None
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: list[str], prose: set[int], first: int, last: int) -> int:
    """Lines ``first`` to ``last`` that are code: not blank, a comment or a docstring's.

    Examples
    --------
    >>> code_lines(["class A:", "    # why", "", "    x = 1"], set(), 1, 4)
    2
    """
    return sum(
        1
        for number in range(first, last + 1)
        if number not in prose
        and source[number - 1].strip()
        and not source[number - 1].strip().startswith("#")
    )


def sizes(kinds: tuple[type[ast.AST], ...]) -> dict[str, int]:
    """Code lines of every ``kinds`` node in ``kit`` by ``path::name``, prose not counted.

    What a class does is its code; its docstring (a numpydoc page with
    examples) is how it is read, and a long one is no reason to split it.
    ``ast.Module`` counts whole modules, by path.

    Examples
    --------
    >>> sizes((ast.Module,))["kit/task.py"] < MAX_MODULE_LINES
    True
    """
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = parse(text)
        prose, source = prose_lines(tree), text.splitlines()
        where = str(path.relative_to(ROOT.parent))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module) and ast.Module in kinds:
                found[where] = code_lines(source, prose, 1, len(source))
            elif isinstance(node, kinds) and not isinstance(node, ast.Module):
                first, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
                found[f"{where}::{node.name}:{first}"] = code_lines(source, prose, first, end)  # type: ignore[attr-defined]
    return found


def class_sizes() -> dict[str, int]:
    """Code lines of every class in ``kit``, by ``path::name``."""
    return {name.rpartition(":")[0]: size for name, size in sizes((ast.ClassDef,)).items()}


def test_kits_top_holds_at_most_fifteen_modules() -> None:
    top = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_class_in_kit_passes_the_limit() -> None:
    over = {name: size for name, size in class_sizes().items() if size > MAX_CLASS_LINES}
    assert over == {}, f"classes over {MAX_CLASS_LINES} code lines: split them by concern"


def test_the_largest_classes_are_measured_in_code_lines() -> None:
    sizes = class_sizes()
    assert 100 < sizes["kit/runner.py::Runner"] < 250  # its docstrings are most of its lines


def test_no_function_in_kit_passes_the_limit() -> None:
    over = {
        name: size
        for name, size in sizes((ast.FunctionDef, ast.AsyncFunctionDef)).items()
        if size > MAX_FUNCTION_LINES
    }
    assert over == {}, f"functions over {MAX_FUNCTION_LINES} code lines: name their steps"


def test_no_module_in_kit_passes_the_limit() -> None:
    over = {name: size for name, size in sizes((ast.Module,)).items() if size > MAX_MODULE_LINES}
    assert over == {}, f"modules over {MAX_MODULE_LINES} code lines: one concept a module"
