"""The public surface is exactly what ``__all__`` says."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from types import ModuleType

import pytest

import kit
import kit.asr
import kit.cluster
import kit.config
import kit.dashboard
import kit.detached
import kit.errors
import kit.history
import kit.rl
import kit.store
import kit.tracking
import kit.views
from kit import widgets
from tests.sources import parsed

MODULES = [
    kit,
    kit.errors,
    kit.config,
    kit.cluster,
    kit.store,
    kit.detached,
    kit.views,
    kit.dashboard,
    kit.history,
    kit.rl,
    kit.asr,
    kit.tracking,
    widgets,
]


def public_names(module: ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_lists_exactly_the_public_names(module: ModuleType) -> None:
    assert set(module.__all__) == public_names(module)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_function_has_a_docstring_example(module: ModuleType) -> None:
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__ and ">>>" in obj.__doc__, f"{module.__name__}.{name}"


def test_widgets_use_only_kits_public_api() -> None:
    """The notebook UI is a client of ``kit`` like any other: no private module of it."""
    private = []
    for path in sorted(Path(widgets.__file__).parent.glob("*.py")):
        for node in ast.walk(parsed(path)):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            private += [
                f"{path.name}:{node.lineno}: {name}"
                for name in names
                if name.split(".")[0] == "kit"
                and not name.startswith("kit.widgets")  # its own modules
                and any(p.startswith("_") for p in name.split("."))
            ]
    assert private == []


def test_kit_installs_by_a_name_of_its_own_and_every_hint_uses_it() -> None:
    import re
    import tomllib

    from kit._base.extras import DISTRIBUTION

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    # `kit` on the package index is an unrelated project: a hint naming it installs that.
    assert project["name"] == DISTRIBUTION != "kit"
    texts = [
        *(root / "kit").rglob("*.py"),
        *(root / "docs").glob("*.md"),
        root / "README.md",
        root / "CONTRIBUTING.md",
        *(root / "tests").rglob("*.py"),  # messages pinned in tests, regex-escaped ones too
    ]
    wrong = [
        f"{path.relative_to(root)}: {line.strip()}"
        for path in texts
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"pip install '?kit(\\?\[|'|\s|$)", line)
    ]
    assert wrong == []


def test_every_error_and_warning_is_in_kit_errors() -> None:
    # One home for the tree (CONTRIBUTING's policy): kit keeps the three met most.
    errors = {
        f"{module.__name__}.{name}": getattr(module, name)
        for module in MODULES
        for name in module.__all__
        if isinstance(getattr(module, name), type)
        and issubclass(getattr(module, name), BaseException)
    }
    assert {value.__name__ for value in errors.values()} <= set(kit.errors.__all__)
    assert sorted(n for n in errors if n.startswith("kit.") and n.count(".") == 1) == [
        "kit.ConfigError",
        "kit.KitError",
        "kit.RunError",
    ]


def test_every_error_class_is_defined_on_the_ground_floor() -> None:
    # kit/_base/errors.py imports nothing of Kit at run time: raising an error never loads
    # another wing (kit.rl's errors once brought numpy into a bare `import kit`).
    import ast
    import inspect

    import kit._base.errors

    for name in kit.errors.__all__:
        assert getattr(kit._base.errors, name) is getattr(kit.errors, name), name
    top_level = ast.parse(inspect.getsource(kit._base.errors)).body  # not under TYPE_CHECKING
    imported = [n.module for n in top_level if isinstance(n, ast.ImportFrom)] + [
        alias.name for n in top_level if isinstance(n, ast.Import) for alias in n.names
    ]
    assert set(imported) <= {"__future__", "typing"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("kit.StoreError", "kit.errors.StoreError"),
        ("kit.ProviderSetupError", "kit.errors.ProviderSetupError"),
        ("kit.store.StoreWarning", "kit.errors.StoreWarning"),
        ("kit.session.get_session", "kit.cluster.get_session"),
        ("kit.RunDir", "kit.store.RunDir"),
        ("kit.job_script", "kit.cluster.job_script"),
        ("kit.rl.WorkerPool", "kit.rl.pool.WorkerPool"),
        ("kit.rl.EnvPoolError", "kit.errors.EnvPoolError"),
        ("kit.rl.TRAIN", "kit.rl.collect.TRAIN"),
        ("kit.to_overrides", "kit.config.to_overrides"),
        ("kit.sessions", "kit.cluster.sessions"),
        ("kit.DetachedRun", "kit.detached.DetachedRun"),
        ("kit.rl.PrioritizedReplayBuffer", "kit.rl.buffer.PrioritizedReplayBuffer"),
    ],
)
def test_a_name_that_moved_still_works_for_a_release_and_says_where_it_went(
    old: str, new: str
) -> None:
    import importlib

    module, _, name = old.rpartition(".")
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}; .* the next release"):
        value = getattr(importlib.import_module(module), name)
    home, _, attr = new.rpartition(".")
    assert value is getattr(importlib.import_module(home), attr)
    assert name not in importlib.import_module(module).__dict__.get("__all__", [])


def test_kit_exports_the_names_a_notebook_starts_from_only() -> None:
    # Helpers live in their wings (kit.config, kit.cluster, kit.detached): a surface
    # a user can read at a glance, as httpx's.
    assert len(kit.__all__) <= 30
    assert {"Runner", "EnvironmentProvider", "load_config", "sweep", "attach"} <= set(kit.__all__)


def test_kit_rl_exports_its_entry_points_only() -> None:
    # Pools, workers, env states, seeds and the toy game live in their submodules.
    assert len(kit.rl.__all__) <= 15
    assert {"build_pool", "EpisodeCollector", "Learner", "ReplayBuffer"} <= set(kit.rl.__all__)
    assert not {"RockPaperScissors", "SyncEnvWorker", "AsyncWorkerPool"} & set(kit.rl.__all__)
