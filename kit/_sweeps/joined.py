"""One signature for a sweep's two calls: ``submit_*`` starts it, the plain name waits for it.

``sweep`` and ``search`` take what ``submit_sweep`` and ``submit_search``
take, so they are made from them: a keyword added to one is in both, and
their signatures cannot drift apart.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
R = TypeVar("R", covariant=True)


class Joins(Protocol[R]):
    """A handle whose ``join()`` waits for the end and gives the result."""

    def join(self) -> R:
        """Wait for the end; return the result."""
        ...


def waits_for(submit: Callable[P, Joins[R]]) -> Callable[[Callable[[], R]], Callable[P, R]]:
    """Make the decorated stub call ``submit`` and wait: ``submit(...).join()``.

    The stub gives the name, the docstring (with its doctests, run where the
    stub is) and the return annotation; ``submit`` gives every parameter. The
    stub's body is never run.

    Examples
    --------
    >>> class Handle:
    ...     def __init__(self, n): self.n = n
    ...     def join(self): return self.n * 2
    >>> def submit_twice(n: int, *, extra: int = 0) -> Handle:
    ...     return Handle(n + extra)
    >>> @waits_for(submit_twice)
    ... def twice() -> int:
    ...     '''Twice ``n``, waited for.'''
    ...     raise NotImplementedError
    >>> twice(3, extra=1), str(inspect.signature(twice)), twice.__doc__
    (8, "(n: 'int', *, extra: 'int' = 0) -> 'int'", 'Twice ``n``, waited for.')
    """

    def decorate(stub: Callable[[], R]) -> Callable[P, R]:
        def wait(*args: P.args, **kwargs: P.kwargs) -> R:
            return submit(*args, **kwargs).join()

        # Built in the stub's module, so doctest and Sphinx find it there, as if written there.
        made = types.FunctionType(
            wait.__code__, stub.__globals__, stub.__name__, None, wait.__closure__
        )
        made.__doc__, made.__qualname__ = stub.__doc__, stub.__qualname__
        made.__module__ = stub.__module__
        returns = inspect.signature(stub).return_annotation
        made.__signature__ = inspect.signature(submit).replace(  # type: ignore[attr-defined]
            return_annotation=returns
        )
        return made

    return decorate
