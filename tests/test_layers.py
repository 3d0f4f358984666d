"""Which part of Kit may import which: the layering the README's architecture section states."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def offenders(folders: list[str], forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for folder in folders:
        target = ROOT / folder
        paths = [target] if target.is_file() else sorted(target.rglob("*.py"))
        for path in paths:
            out += [
                f"{path.relative_to(ROOT)}: {module}"
                for module in sorted(imports(path))
                if module.split(".")[0] in forbidden or module.startswith(forbidden)
            ]
    return out


@pytest.mark.parametrize("folder", ["kit/views", "kit/dashboard", "kit/tracking"])
def test_views_read_the_event_stream_never_dask(folder: str) -> None:
    assert offenders([folder], ("dask", "distributed")) == []


def test_the_engine_and_the_workers_never_draw_nor_track() -> None:
    drawing = ("kit.dashboard", "kit.views", "kit.tracking", "bokeh", "ipywidgets", "widgets")
    assert offenders(["kit/_engine", "kit/_plugin.py", "kit/_chunk.py"], drawing) == []


def test_kit_rl_pools_collectors_buffers_and_learner_need_no_dask() -> None:
    plain = [
        f"kit/rl/{name}.py"
        for name in ("pool", "shared", "workers", "collect", "buffer", "learner", "battle")
    ]
    assert offenders(plain, ("dask", "distributed")) == []


def test_no_client_is_taken_from_dasks_globals() -> None:
    taken = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "kit").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Name | ast.Attribute)
        and getattr(node, "id", getattr(node, "attr", None)) in ("default_client", "get_client")
    ]
    assert taken == []
