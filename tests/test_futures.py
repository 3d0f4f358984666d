"""The two handle shapes: a run's and a sweep's, the same live and read from a folder."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import kit
from kit._sweeps.sweep import EXAMPLE
from tests.sources import parsed
from tests.workloads import Affine, ToyProvider, expected, toy_config

pytestmark = pytest.mark.slow


def test_a_live_and_a_detached_run_answer_the_same_names(tmp_path: Path) -> None:
    live = Affine(ToyProvider(toy_config()), output_dir=tmp_path / "live", chunk_size=4)
    detached = Affine(ToyProvider(toy_config()), output_dir=tmp_path / "detached", chunk_size=4)
    handles = [live.submit(range(10)), detached.submit(range(10), detached=True)]
    assert all(isinstance(handle, kit.RunFuture) for handle in handles)
    # A run has no trials' rows: a command tells the two shapes apart by that.
    assert not any(isinstance(handle, kit.SweepFuture) for handle in handles)
    results = [handle.result(timeout=120) for handle in handles]
    assert [r.records for r in results] == [expected(range(10))] * 2
    assert [handle.status for handle in handles] == [kit.RunStatus.COMPLETED] * 2
    assert [handle.progress for handle in handles] == [
        kit.Progress(10, 0, 10, kit.RunStatus.COMPLETED)
    ] * 2
    assert [dict(handle) for handle in handles] == [dict(enumerate(expected(range(10))))] * 2
    for handle in handles:
        handle.cancel(timeout=1)  # an ended run: nothing to stop, no error
        assert handle.done()


def test_a_detached_run_yields_records_while_its_driver_runs(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # Chunks slower than the inline commit window are stored as soon as they end.
    config = toy_config(gate=str(gate), gate_from=4, sleep=0.03)
    run = Affine(ToyProvider(config), output_dir=tmp_path / "run", chunk_size=2).submit(
        range(8), detached=True
    )
    seen = []
    for index, record in run:
        seen.append(index)
        if index == 3:
            # Items 4 and on wait for the gate: the driver is still running.
            assert not run.done() and run.status is kit.RunStatus.RUNNING
            gate.touch()
        assert record == expected([index])[0]
    assert seen == list(range(8))
    assert run.status is kit.RunStatus.COMPLETED


def test_iterating_a_run_that_stopped_early_raises_after_its_records(tmp_path: Path) -> None:
    config = toy_config(fail_on=[5])
    run = Affine(
        ToyProvider(config), output_dir=tmp_path / "run", chunk_size=2, on_error="raise"
    ).submit(range(8), detached=True)
    seen = []
    with pytest.raises(kit.RunError, match="stopped early"):
        for index, _ in run:
            seen.append(index)
    assert 5 not in seen and {0, 1, 2, 3} <= set(seen)


def test_a_live_and_a_stored_sweep_answer_the_same_names(tmp_path: Path) -> None:
    live = kit.submit_sweep(EXAMPLE, ["items.stop=2,3"], output_dir=tmp_path)
    live.result(timeout=120)
    stored = kit.attach(tmp_path)
    handles = [live, stored]
    assert all(isinstance(handle, kit.SweepFuture) for handle in handles)
    assert [handle.status for handle in handles] == [kit.RunStatus.COMPLETED] * 2
    # One progress shape on runs and sweeps: a Progress, here counting trials.
    assert [handle.progress for handle in handles] == [
        kit.Progress(2, 0, 2, kit.RunStatus.COMPLETED, running=0, unit="trials")
    ] * 2
    assert [str(handle.progress) for handle in handles] == ["2/2 trials done, 0 running"] * 2
    assert [[row["status"] for row in handle.rows()] for handle in handles] == [
        ["completed", "completed"]
    ] * 2
    ended = [[(trial.name, result.stats.ok) for trial, result in handle] for handle in handles]
    assert ended == [[("trial-000", 2), ("trial-001", 3)]] * 2
    for handle in handles:
        handle.cancel(timeout=1)  # an ended sweep: nothing to stop, no error
        assert handle.done() and handle.status is kit.RunStatus.COMPLETED


def test_a_cancelled_sweep_says_so_live_and_from_its_folder(tmp_path: Path) -> None:
    slow = {**EXAMPLE, "model": {"coefficients": [0.0, 1.0], "work_seconds": 0.05}}
    live = kit.submit_sweep(slow, ["items.stop=400,401"], output_dir=tmp_path, concurrency=1)
    while live.progress.running != 1:
        assert not live.done()
        time.sleep(0.01)
    live.cancel(timeout=60)
    assert live.done() and live.status is kit.RunStatus.CANCELLED
    assert kit.attach(tmp_path).status is kit.RunStatus.CANCELLED
    assert [row["status"] for row in kit.attach(tmp_path).rows()] == ["cancelled", "pending"]


def test_kit_cancel_speaks_of_a_run_and_a_sweep_alike(tmp_path: Path) -> None:
    kit.sweep(EXAMPLE, ["items.stop=2,3"], output_dir=tmp_path / "sweep")
    Affine(ToyProvider(toy_config()), output_dir=tmp_path / "run").run(range(3))
    said = [
        subprocess.run(
            [sys.executable, "-m", "kit", "cancel", str(tmp_path / name)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for name in ("run", "sweep")
    ]
    assert said == [
        f"{tmp_path / 'run'}: nothing to cancel (completed, 3/3 items)\n",
        f"{tmp_path / 'sweep'}: nothing to cancel (completed, 2/2 trials done, 0 running)\n",
    ]


def test_every_handle_cancels_with_one_meaning_of_timeout() -> None:
    # Ask to stop; wait up to `timeout` s for the end; by default return at once.
    import inspect

    from kit._engine.run import RunHandle
    from kit._sweeps.sweep import SweepHandle
    from kit.detached import DetachedRun, DetachedSweep

    defaults = {
        shape.__name__: inspect.signature(shape.cancel).parameters["timeout"].default
        for shape in (RunHandle, SweepHandle, DetachedRun, DetachedSweep)
    }
    assert defaults == dict.fromkeys(defaults, 0.0)


def test_the_cli_treats_every_handle_alike() -> None:
    # `kit status` and `kit cancel` ask the handle; no command tells the classes apart.
    import ast

    trees = [parsed(path) for path in (Path(kit.__file__).parent / "cli").glob("*.py")]
    handle_types = {"RunFuture", "SweepFuture", "DetachedRun", "DetachedSweep", "Progress"}
    assert len(trees) > 5  # every command group's module
    branches = [
        ast.unparse(node)
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "isinstance"
        and handle_types & {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
    ]
    assert branches == []
