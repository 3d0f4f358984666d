"""RunDir and SweepDir: the one module that names the files of run and sweep folders."""

from __future__ import annotations

import ast
from pathlib import Path

import kit
from kit.store import RunDir, SweepDir
from tests.workloads import Affine, ToyProvider, toy_config

ROOT = Path(__file__).resolve().parents[1]
#: The folder files' names (the lock and the chunks folder are named by the store alone).
FILE_NAMES = {name for name in (*RunDir.NAMES, *SweepDir.NAMES) if "." in name[1:]}
#: The same words naming other files: the config a notebook saves beside itself for
#: its scale-out command (a default argument), not a run folder's.
OTHER_FILES = {
    ("kit/cluster/_scale_out.py", "config.yaml"),
    ("kit/widgets/_experiment.py", "config.yaml"),
    ("kit/widgets/_run_panel.py", "config.yaml"),
    ("kit/widgets/_sample_run.py", "config.yaml"),
}


def literals(path: Path) -> list[tuple[int, str]]:
    """The string literals of ``path``'s code, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_no_module_but_rundir_spells_a_run_or_sweep_folder_file_name() -> None:
    spelled = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in sorted((ROOT / "kit").rglob("*.py"))
        if path.name != "_rundir.py"
        for line, value in literals(path)
        if value in FILE_NAMES and (str(path.relative_to(ROOT)), value) not in OTHER_FILES
    ]
    assert spelled == [], "ask kit.store.RunDir or kit.store.SweepDir for these paths instead"


def test_a_run_and_its_detached_driver_write_only_the_files_rundir_names(tmp_path: Path) -> None:
    folder = RunDir(tmp_path / "run")
    run = Affine(ToyProvider(toy_config()), output_dir=folder.path).submit(range(4), detached=True)
    assert run.result(timeout=120).status == "completed"
    written = {path.name for path in folder.path.iterdir()}
    assert written <= set(RunDir.NAMES) | {"tracking.json", "job-logs"}, written
    for name in ("manifest", "config", "ledger", "result", "events", "report", "driver", "job"):
        assert getattr(folder, name).is_file(), name


def test_a_sweep_writes_its_record_and_trial_folders_where_sweepdir_says(tmp_path: Path) -> None:
    folder = SweepDir(tmp_path / "sweep")
    kit.sweep(kit._sweeps.sweep.EXAMPLE, ["items.stop=2,3"], output_dir=folder.path)
    assert folder.holds_sweep() and folder.report.is_file()
    assert [folder.trial(n).result.is_file() for n in (0, 1)] == [True, True]
    assert {path.name for path in folder.path.iterdir()} <= SweepDir.NAMES | {
        folder.trial(0).path.name,
        folder.trial(1).path.name,
    }
