"""Old spellings of public names that moved, kept for one release, with a warning."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def moved(owner: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` giving each name of ``homes`` from its new module.

    Each use warns (``DeprecationWarning``) naming the new spelling; any
    other name is the usual ``AttributeError``.

    Examples
    --------
    >>> import warnings
    >>> getattr_ = moved("kit", {"StoreError": "kit.errors"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_("StoreError").__name__
    'StoreError'
    >>> print(caught[0].message)
    kit.StoreError moved to kit.errors.StoreError; kit.StoreError goes in the next release
    >>> getattr_("Nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'kit' has no attribute 'Nothing'
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        warnings.warn(
            f"{owner}.{name} moved to {home}.{name}; {owner}.{name} goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__
