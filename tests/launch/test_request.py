"""The run request: one frozen description of a run, assembled in one place.

Every caller makes a request; none changes the runner its user built.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from pathlib import Path

import cloudpickle
import pytest

import kit
from kit.errors import StoreError
from kit.launch import RunRequest, assemble, check_resume, launch
from tests.workloads import Affine, ToyProvider, expected, toy_config

ROOT = Path(kit.__file__).parent


def test_a_request_is_frozen_and_a_replace_leaves_the_first_as_it_was(tmp_path: Path) -> None:
    request = RunRequest.of(Affine(ToyProvider(toy_config())), 3, offset=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.output_dir = tmp_path  # type: ignore[misc]
    moved = request.replace(output_dir=tmp_path / "a", tracking=None, draws_report=False)
    assert (moved.output_dir, moved.draws_report) == (tmp_path / "a", False)
    assert (request.output_dir, request.draws_report) == (None, True)
    assert moved.items == range(3) and moved.forward_kwargs == {"offset": 1}


def test_two_requests_of_one_runner_run_into_their_own_folders_and_leave_it_unchanged(
    tmp_path: Path,
) -> None:
    runner = Affine(ToyProvider(toy_config()), output_dir=tmp_path / "full", chunk_size=2)
    before = copy.copy(vars(runner))
    handles = [
        assemble(RunRequest.of(runner, range(4)).replace(output_dir=tmp_path / name))
        for name in ("check-a", "check-b")
    ]
    for handle in handles:
        handle.start()
    for handle in handles:
        assert handle.result().records == expected(range(4))
    assert (tmp_path / "check-a" / "result.json").is_file()
    assert (tmp_path / "check-b" / "result.json").is_file()
    assert not (tmp_path / "full").exists()  # the runner's own folder: the full run's
    assert vars(runner) == before


def test_a_request_crosses_to_a_driver_process_and_runs_there(tmp_path: Path) -> None:
    # A detached run's request is pickled into its folder for the driver to assemble.
    request = RunRequest.of(Affine(ToyProvider(toy_config())), range(5))
    again = cloudpickle.loads(cloudpickle.dumps(request.replace(output_dir=tmp_path / "r")))
    assert isinstance(again, RunRequest) and again.output_dir == tmp_path / "r"
    result = kit.launch.run(again)
    assert result.records == [{"idx": i, "y": i * 2 + 1} for i in range(5)]


def test_the_resume_check_reads_the_request_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    runner = Affine(ToyProvider(toy_config()), output_dir=out)
    kit.launch.run(RunRequest.of(runner, range(4)))
    listing = sorted(p.name for p in out.iterdir())
    check_resume(RunRequest.of(runner, range(4)))  # the same run: it would resume
    with pytest.raises(StoreError, match="items"):
        check_resume(RunRequest.of(runner, range(6)))
    assert sorted(p.name for p in out.iterdir()) == listing


def test_a_detached_launch_without_a_folder_says_what_it_needs() -> None:
    request = RunRequest.of(Affine(ToyProvider(toy_config())), 3)
    with pytest.raises(ValueError, match="a detached run needs an output_dir"):
        launch(request, detached=True)


def test_no_code_of_kit_sets_a_field_of_a_runner_after_it_was_built() -> None:
    # What differs between runs of one runner lives in their requests (see RunRequest).
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "runner.py":
            continue  # the runner's own __init__
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if (
                        isinstance(part, ast.Attribute)
                        and isinstance(part.value, ast.Name)
                        and "runner" in part.value.id
                    ):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) == "setattr"
                and node.args
                and "runner" in ast.unparse(node.args[0])
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_every_run_handle_is_made_by_assemble() -> None:
    makers = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted(ROOT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "RunHandle"
    ]
    assert [maker.partition(":")[0] for maker in makers] == ["launch/_assemble.py"]


def test_a_detached_driver_starts_its_sweep_from_the_request_not_a_command_line() -> None:
    tree = ast.parse((ROOT / "_driver.py").read_text(encoding="utf-8"))
    imported = [
        alias.name if isinstance(node, ast.Import) else node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [module for module in imported if module.startswith("kit.cli")]
