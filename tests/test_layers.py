"""Which part of Kit may import which: the layering docs/architecture.md states."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.sources import parsed

ROOT = Path(__file__).resolve().parents[1]


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
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
    drawing = ("kit.dashboard", "kit.views", "kit.tracking", "kit.widgets", "bokeh", "ipywidgets")
    assert (
        offenders(
            [
                "kit/_engine",
                "kit/cluster/_plugin.py",
                "kit/_engine/chunk.py",
                "kit/store/_chunk_result.py",
            ],
            drawing,
        )
        == []
    )


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
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Name | ast.Attribute)
        and getattr(node, "id", getattr(node, "attr", None)) in ("default_client", "get_client")
    ]
    assert taken == []


def test_hydra_is_used_through_its_public_api_only() -> None:
    # hydra._internal may change in any release; the grid is built from the parser's
    # public Override API (tests/config/test_sweeps.py checks it against Hydra's multirun).
    assert offenders(["kit"], ("hydra._internal",)) == []


def test_the_core_never_imports_the_notebook_ui() -> None:
    # kit.widgets imports kit; no other module of kit imports kit.widgets.
    core = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "kit").rglob("*.py"))
        if "widgets" not in path.relative_to(ROOT / "kit").parts
    ]
    assert offenders(core, ("kit.widgets",)) == []


def test_no_run_or_trial_state_is_compared_as_a_string() -> None:
    # The enums spell them (RunStatus, and TrialState.word for a trial): a typo in a string
    # compares false silently. "running" and "error" are left out: Dask's own clients
    # and futures report those as strings.
    states = {"completed", "cancelled", "stopped", "pruned", "pending", "died", "incomplete"}
    found = []
    for path in sorted((ROOT / "kit").rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "count":
                parts = list(node.args)
            else:
                continue
            literals = [
                c.value
                for part in parts
                for c in ast.walk(part)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
            if states & set(literals):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def module_files() -> dict[str, Path]:
    """Every module of ``kit`` by dotted name (a package by its ``__init__``).

    A compiled module counts by its stub (``kit/asr/_align.pyi``): it imports nothing of kit.
    """
    found = {}
    for package in ("kit",):
        paths = [*(ROOT / package).rglob("*.py"), *(ROOT / package).rglob("*.pyi")]
        for path in sorted(paths):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: line}}``, lazy and type-only (``TYPE_CHECKING``) ones included.

    A typing import is an import all the same: the two modules lean on each
    other, and a circle through one is a circle a reader has to follow.

    ``from package import name`` counts as importing ``package.name`` when
    that is a module, else ``package``.
    """
    files = module_files()

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for module, path in files.items():
        tree = parsed(path)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1], base]).strip(".")
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                    for alias in node.names
                ]
            else:
                continue
            for name in names:
                target = owner(name)
                if target is not None and target != module:
                    edges.setdefault(target, node.lineno)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import graph's strongly connected components of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in graph:
        if module not in order:
            visit(module)
    return found


def test_kit_imports_in_one_direction_lazy_and_typing_imports_included() -> None:
    graph = import_graph()
    assert "kit._engine.dask" in graph["kit._engine.run"]  # the scan sees real imports
    assert "kit.detached._run" in graph["kit.runner"]  # and typing ones
    explained = [
        [f"{a} -> {b} (line {graph[a][b]})" for a in component for b in component if b in graph[a]]
        for component in cycles(graph)
    ]
    assert explained == []


def test_the_cycle_finder_finds_a_lazy_cycle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 9}, "d": {"a": 3}}
    assert cycles(graph) == [["a", "b", "c"]]


def wing_of(module: str) -> str:
    """A module's wing: the folder it sits in under ``kit`` (``kit._engine``, ``kit.store``...),
    or the module itself for a file at the top (``kit.runner``)."""
    parts = module.split(".")
    return ".".join(parts[:2])


def wing_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The import graph with each wing drawn as one node; ``kit`` itself (the face) left out."""
    wings: dict[str, dict[str, int]] = {}
    for module, edges in graph.items():
        if module == "kit":
            continue
        own = wings.setdefault(wing_of(module), {})
        for target in edges:
            if target != "kit" and wing_of(target) != wing_of(module):
                own.setdefault(f"{wing_of(target)}", 0)
                own[wing_of(target)] += 1
    for targets in list(wings.values()):
        for target in targets:
            wings.setdefault(target, {})
    return wings


def test_the_wings_import_in_one_direction_lazy_imports_included() -> None:
    # A wing is a folder of kit; moving a file between wings must not make two wings
    # lean on each other (docs/architecture.md draws the order).
    graph = import_graph()
    wings = wing_graph(graph)
    assert {"kit._engine", "kit.cluster", "kit.store", "kit.detached", "kit._sweeps"} <= set(wings)
    explained = [
        sorted(
            f"{a} -> {b}: "
            + ", ".join(
                f"{m} -> {t}"
                for m in graph
                for t in graph[m]
                if wing_of(m) == a and wing_of(t) == b
            )
            for a in component
            for b in component
            if b in wings[a]
        )
        for component in cycles(wings)
    ]
    assert explained == []


@pytest.mark.parametrize(
    ("wing", "below"),
    [
        ("kit.store", ("kit._engine", "kit.cluster", "kit.detached", "kit._sweeps", "kit.runner")),
        ("kit.cluster", ("kit._engine", "kit.detached", "kit._sweeps", "kit.runner")),
        ("kit._engine", ("kit.detached", "kit._sweeps", "kit.runner", "kit.cli")),
        ("kit.detached", ("kit._sweeps", "kit.runner", "kit.cli")),
    ],
)
def test_each_wing_stands_below_the_ones_that_use_it(wing: str, below: tuple[str, ...]) -> None:
    wings = wing_graph(import_graph())
    assert sorted(set(wings[wing]) & set(below)) == []


def test_the_sweep_seam_knows_no_search_library() -> None:
    # A grid and a search are plans behind one Protocol; Optuna stays in the search plan.
    tree = parsed(ROOT / "kit/_trials/trial.py")
    plan = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "TrialPlan")
    assert "optuna" not in ast.unparse(plan).lower()
    for seam in ("kit/_trials/trial.py", "kit/_sweeps/sweep.py", "kit/_sweeps/driving.py"):
        assert not any(module.startswith("optuna") for module in imports(ROOT / seam))
