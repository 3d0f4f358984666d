"""Deprecated alias of :mod:`kit.cluster`, kept for one release.

Sessions moved to :mod:`kit.cluster` with the cluster builders and the env
plugin; ``from kit.session import get_session`` still works and warns.

Examples
--------
>>> import warnings
>>> import kit.session
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     kit.session.sessions is kit.cluster.sessions
True
>>> print(caught[0].message)
kit.session.sessions moved to kit.cluster.sessions; kit.session goes in the next release
"""

from __future__ import annotations

import warnings
from typing import Any

import kit.cluster

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(kit.cluster, name)
    warnings.warn(
        f"kit.session.{name} moved to kit.cluster.{name}; kit.session goes in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return value
