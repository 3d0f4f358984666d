"""Sizes that show the design: few modules at ``kit/``'s top, no class too big to read.

A family of modules has a wing (a folder) of its own, so the top holds
only the vocabulary and the entry points. A class past ``MAX_CLASS_LINES``
is two concerns: a widget is a model and its view (``SampleRun`` and
``RunPanel``), a run folder's store its lock, its ledger and its begin,
resume and commit (``FolderLock``, ``Ledger``, ``RunStore``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import kit

ROOT = Path(kit.__file__).parent
MAX_TOP_MODULES = 15
MAX_CLASS_LINES = 250


def class_sizes() -> dict[str, int]:
    """Lines of every class in ``kit``, by ``path::name``."""
    sizes = {}
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                name = f"{path.relative_to(ROOT.parent)}::{node.name}"
                sizes[name] = (node.end_lineno or node.lineno) - node.lineno + 1
    return sizes


def test_kits_top_holds_at_most_fifteen_modules() -> None:
    top = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_class_in_kit_passes_the_limit() -> None:
    over = {name: size for name, size in class_sizes().items() if size > MAX_CLASS_LINES}
    assert over == {}, f"classes over {MAX_CLASS_LINES} lines: split them by concern"
