"""Match a Runner's ``forward`` parameters to env entries by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ForwardSpec:
    """What ``forward`` takes after its first (items) parameter."""

    name: str
    required: frozenset[str]
    optional: frozenset[str]
    takes_all: bool

    @classmethod
    def of(cls, forward: Callable[..., Any], name: str) -> ForwardSpec:
        """Inspect ``forward``'s signature."""
        params = list(inspect.signature(forward).parameters.values())
        if not params or params[0].kind not in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            raise TypeError(f"{name} must take the item index as its first parameter")
        required: set[str] = set()
        optional: set[str] = set()
        takes_all = False
        for param in params[1:]:
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                takes_all = True
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                continue
            elif param.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise TypeError(f"{name}: parameter {param.name!r} must be passable by keyword")
            elif param.default is inspect.Parameter.empty:
                required.add(param.name)
            else:
                optional.add(param.name)
        return cls(name, frozenset(required), frozenset(optional), takes_all)

    def check(self, env_keys: Iterable[str], explicit: Mapping[str, Any]) -> None:
        """Raise before any item runs if ``forward`` cannot be called."""
        keys = set(env_keys)
        clash = sorted(keys & set(explicit))
        if clash:
            raise TypeError(
                f"{self.name}: keyword {clash[0]!r} is passed explicitly and also exists in "
                "the env; rename one of them"
            )
        unknown = sorted(set(explicit) - self.required - self.optional)
        if unknown and not self.takes_all:
            raise TypeError(f"{self.name} has no parameter {unknown[0]!r} (passed explicitly)")
        missing = sorted(self.required - keys - set(explicit))
        if missing:
            have = ", ".join(sorted(keys)) or "nothing"
            raise TypeError(
                f"{self.name} needs {missing[0]!r}, which the env does not have "
                f"(the env has: {have}); add it to the provider's env or give it a default"
            )

    def kwargs(self, env: Mapping[str, Any], explicit: Mapping[str, Any]) -> dict[str, Any]:
        """Return the keyword arguments for one call of ``forward``."""
        if self.takes_all:
            out = dict(env)
        else:
            wanted = self.required | self.optional
            out = {key: env[key] for key in wanted if key in env}
        out.update(explicit)
        return out
