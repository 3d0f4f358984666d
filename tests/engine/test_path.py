"""The path from ``Runner.run`` to ``forward`` is short enough to read: the frames, counted.

``kit/_engine/__init__.py`` tabulates it; these tests count the frames of
Kit's own code that a run really goes through, so the table cannot drift.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

from distributed import Client

import kit
from kit import Runner
from tests.workloads import EmptyEnv

ROOT = Path(kit.__file__).parent


def kit_frames(stack: traceback.StackSummary) -> list[tuple[str, str]]:
    """``(module file, function)`` of each frame of Kit's own code, outermost first."""
    return [
        (str(Path(frame.filename).relative_to(ROOT.parent)), frame.name)
        for frame in stack
        if Path(frame.filename).is_relative_to(ROOT)
    ]


class OwnStack(Runner):
    """Each record is the frames of Kit's code above ``forward``, where it ran."""

    @staticmethod
    def forward(idx: int) -> list[tuple[str, str]]:
        return kit_frames(traceback.extract_stack()[:-1])


class RecordingClient(Client):
    """A real client that keeps the driver's stack at each call that sends tasks."""

    stacks: list[list[tuple[str, str]]]

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self.stacks.append(kit_frames(traceback.extract_stack()[:-1]))
        return super().submit(*args, **kwargs)

    def map(self, *args: Any, **kwargs: Any) -> Any:
        self.stacks.append(kit_frames(traceback.extract_stack()[:-1]))
        return super().map(*args, **kwargs)


def test_an_inline_run_reaches_forward_through_seven_functions_in_five_modules() -> None:
    frames = OwnStack(EmptyEnv({}), parallel={"env": "inline"}).run(range(1)).records[0]
    assert frames == [
        ("kit/runner.py", "run"),
        ("kit/launch/_launchers.py", "run"),
        ("kit/_engine/run.py", "drive"),
        ("kit/_engine/run.py", "drive"),
        ("kit/_engine/inline.py", "run"),
        ("kit/_engine/inline.py", "_execute"),
        ("kit/_engine/chunk.py", "execute_chunk"),
    ]


def test_a_dask_run_reaches_forward_through_eight_functions_in_six_modules(
    local_client: Any,
) -> None:
    address, security = local_client.scheduler.address, local_client.security
    with RecordingClient(address, security=security, set_as_default=False) as client:
        client.stacks = []
        records = OwnStack(EmptyEnv({}), client=client).run(range(1)).records
    # Runner.run starts the handle's thread, whose stack begins at Run.drive.
    driver = client.stacks[0]
    assert driver == [
        ("kit/_engine/run.py", "drive"),
        ("kit/_engine/dask.py", "run"),
        ("kit/_engine/dask.py", "launch_many"),
    ]
    assert records[0] == [
        ("kit/_engine/task.py", "run_chunk"),
        ("kit/_engine/chunk.py", "execute_chunk"),
    ]
    path = [
        ("kit/runner.py", "run"),
        ("kit/launch/_launchers.py", "run"),
        ("kit/_engine/run.py", "start"),
        *driver,
        *records[0],
    ]
    assert len(path) == 8
    assert len({module for module, _ in path}) == 6
