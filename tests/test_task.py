"""A runner is a declaration: Kit reads it into a frozen Task, refuses what would take a hook's
place, and never adds to, sets on or changes the user's class or object."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import kit
from kit.launch import RunRequest
from kit.task import Task
from tests.workloads import Affine, ToyProvider, toy_config


class Declared(kit.Runner):
    forward_keys = ("scale",)
    check_ignore = ("when",)
    check_rtol = 0.01
    cost_by = "size"

    @staticmethod
    def forward(idx: int) -> dict[str, int]:
        return {"y": idx}

    @staticmethod
    def size(idx: int) -> float:
        return float(idx)

    @staticmethod
    def finish(record: Any, config: Any) -> Any:
        return record

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        return {"n": len(records)}


def test_the_task_holds_what_the_class_declares_and_is_frozen() -> None:
    runner = Declared(ToyProvider(toy_config()))
    task = RunRequest.of(runner, 3).task
    assert task.name == f"{__name__}.Declared" and task.owner == "Declared"
    assert task.forward_keys == ("scale",) and task.check_ignore == ("when",)
    assert task.check_rtol == 0.01 and task.cost_by == "size" and task.cost(4) == 4.0
    assert task.finish is Declared.finish and task.summarize([1, 2]) == {"n": 2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.check_rtol = 0.5  # type: ignore[misc]


def test_reading_and_running_leave_the_runner_and_its_class_as_they_were() -> None:
    runner = Affine(ToyProvider(toy_config()))
    before_object, before_class = dict(vars(runner)), dict(vars(Affine))
    Task.of(runner)
    assert runner.run(range(5)).stats.ok == 5
    assert dict(vars(runner)) == before_object and dict(vars(Affine)) == before_class
    assert type(runner).__mro__ == (Affine, kit.Runner, object)  # no mixin in the way


@pytest.mark.parametrize("name", ["run", "submit", "prepare", "check", "__call__"])
def test_a_method_that_would_replace_kits_own_is_refused_naming_it(name: str) -> None:
    with pytest.raises(TypeError) as info:
        type("Mine", (kit.Runner,), {name: lambda self, x: x})
    assert str(info.value).startswith(f"Mine.{name} would replace Runner.{name}, Kit's own")
    assert f"replaces=({name!r},)" in str(info.value)
    # Said on purpose, it stands.
    mine = type("Mine", (kit.Runner,), {name: lambda self, x: x}, replaces=(name,))
    assert name in vars(mine)


def test_replaces_names_only_kits_methods() -> None:
    with pytest.raises(TypeError, match=r"replaces=\['summarize'\] names no method of Kit's"):
        type("Mine", (kit.Runner,), {}, replaces=("summarize",))


@pytest.mark.parametrize(
    ("name", "member", "called"),
    [
        ("check_items", lambda self, indices: [], "check_items(self, indices, env)"),
        ("check_summary", lambda self: {}, "check_summary(self, records)"),
        ("summarize", lambda self, records, extra: {}, "summarize(self, records)"),
        ("report_sections", lambda self, folder: (), "report_sections(self)"),
        ("finish", staticmethod(lambda record: record), "finish(record, config)"),
    ],
)
def test_a_hook_of_another_shape_is_refused_naming_how_kit_calls_it(
    name: str, member: Any, called: str
) -> None:
    with pytest.raises(TypeError) as info:
        type("Mine", (kit.Runner,), {name: member})
    assert str(info.value).startswith(f"Mine.{name} is a hook Kit calls as {called}: ")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("forward_keys", "decoder.*", "must be a tuple of config keys"),
        ("check_ignore", "when", "must be a tuple of dotted record fields"),
        ("check_rtol", -1, "must be a number >= 0"),
        ("cost_by", 3, "must be the name of a static method"),
    ],
)
def test_a_declaration_of_the_wrong_type_is_refused_when_the_class_is_made(
    name: str, value: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=rf"^Mine\.{name} {message}"):
        type("Mine", (kit.Runner,), {name: value})


def test_forward_and_finish_must_be_static() -> None:
    for name in ("forward", "finish"):
        with pytest.raises(TypeError, match=rf"^Mine\.{name} must be a @staticmethod"):
            type("Mine", (kit.Runner,), {name: lambda self, a=None, b=None: a})
