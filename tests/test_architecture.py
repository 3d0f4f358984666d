"""docs/architecture.md's module map is drawn from the code, so it cannot go stale.

The map lists every wing of ``kit`` (a folder, or a module at the top) on
its floor: a wing imports only wings on floors below its own (lazy imports
included), and its line says what its docstring's first line says. When
the code changes, ``python -m tests.test_architecture`` draws the map anew
into the page.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.sources import parsed
from tests.test_layers import import_graph, module_files, wing_graph

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- module map: drawn from the code by tests/test_architecture.py -->"
END = "<!-- end of the module map -->"


def floors(wings: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each wing's floor: one above the highest wing it imports (0: it imports none)."""
    floor: dict[str, int] = {}

    def climb(wing: str) -> int:
        if wing not in floor:
            floor[wing] = 1 + max((climb(below) for below in wings[wing]), default=-1)
        return floor[wing]

    for wing in wings:
        climb(wing)
    return floor


def first_line(path: Path) -> str:
    doc = ast.get_docstring(parsed(path)) or ""
    # As plain text: the page shows it in a block, where RST's ``code`` would show as is.
    return doc.strip().splitlines()[0].replace("``", "") if doc.strip() else ""


def module_map() -> str:
    """The map as the page shows it: a block of text, the top floor first."""
    files = module_files()
    floor = floors(wing_graph(import_graph()))
    shown = {
        wing: f"kit/{wing[4:]}/" if files[wing].name == "__init__.py" else f"kit/{files[wing].name}"
        for wing in floor
    }
    width = max(len(name) for name in shown.values())
    lines = ["```text", f"{'floor':<6} {'wing':<{width}}  what it is (its modules)"]
    for wing in sorted(floor, key=lambda name: (-floor[name], name)):
        inner = sorted(
            name.rpartition(".")[2]
            for name in files
            if name.startswith(wing + ".") and name.count(".") == 2
        )
        lines.append(f"{floor[wing]:<6} {shown[wing]:<{width}}  {first_line(files[wing])}")
        if inner:
            lines.append(f"{'':<6} {'':<{width}}  ({' '.join(inner)})")
    return "\n".join([*lines, "```"])


def drawn(page: str) -> str:
    """The map the page shows now, between its markers."""
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[start:end].strip()


def test_the_module_map_is_the_one_the_code_draws() -> None:
    assert drawn(PAGE.read_text(encoding="utf-8")) == module_map(), (
        "docs/architecture.md's module map is not the code's: "
        "run `python -m tests.test_architecture` to draw it again"
    )


def test_every_wing_says_what_it_is() -> None:
    files = module_files()
    silent = [wing for wing in wing_graph(import_graph()) if not first_line(files[wing])]
    assert silent == []


def test_a_wing_sits_above_every_wing_it_imports() -> None:
    wings = wing_graph(import_graph())
    floor = floors(wings)
    assert all(floor[below] < floor[wing] for wing in wings for below in wings[wing])
    assert floor["kit._base"] == 0 and floor["kit.cli"] > floor["kit.launch"]


if __name__ == "__main__":
    page = PAGE.read_text(encoding="utf-8")
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    PAGE.write_text(f"{page[:start]}\n\n{module_map()}\n\n{page[end:]}", encoding="utf-8")
    sys.exit(0)
