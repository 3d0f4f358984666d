"""One layout for every configuration error: the builder in kit/config/_errors.py."""

from __future__ import annotations

import ast
from pathlib import Path

from kit.config._errors import error

ROOT = Path(__file__).resolve().parents[2]


def test_every_config_error_kit_raises_is_built_by_the_one_builder() -> None:
    built_by_hand = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "kit").rglob("*.py"))
        if path != ROOT / "kit/config/_errors.py"
        # The notebook UI uses kit's public API only: it lists, in one ConfigError of
        # its own, problems each built by the builder.
        and "widgets" not in path.relative_to(ROOT / "kit").parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ConfigError")
    ]
    assert built_by_hand == []


def test_a_config_error_says_what_where_and_the_fix_one_fact_a_line() -> None:
    err = error(
        "holds another sweep (2 trials; this one has 3)",
        full_key="items.stop",
        source="override 'items.stop=3'",
        facts={"only here": ["items.stop=3"]},
        fix="run the same sweep",
    )
    assert str(err).splitlines() == [
        "items.stop: holds another sweep (2 trials; this one has 3)",
        "    full_key: items.stop",
        "    from: override 'items.stop=3'",
        "    only here: ['items.stop=3']",
        "    fix: run the same sweep",
    ]
    assert (err.full_key, err.source) == ("items.stop", None)
