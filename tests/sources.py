"""Kit's own source, parsed for the tests that read its structure.

CPython 3.11 before 3.11.8 shares the AST constructor's recursion count
between threads (python/cpython#106905): a parse on one thread while
another formats a traceback (3.11's carets parse the failing line) can fail
with ``SystemError: AST constructor recursion depth mismatch``, which says
nothing of the source parsed. :func:`parse` parses again then; an error in
the source itself still raises.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: How often a parse is tried before the interpreter's error is let through.
TRIES = 3


def parse(source: str) -> ast.Module:
    """Return the tree of ``source``, as :func:`ast.parse`, past CPython's gh-106905.

    >>> type(parse("x = 1").body[0]).__name__
    'Assign'
    """
    for tried in range(1, TRIES + 1):
        try:
            return ast.parse(source)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or tried == TRIES:
                raise
    raise AssertionError("unreachable")


def parsed(path: Path) -> ast.Module:
    """Return the tree of the Python file at ``path``."""
    return parse(path.read_text(encoding="utf-8"))
