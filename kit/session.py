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
kit.session.sessions moved to kit.cluster.sessions; kit.session.sessions goes in the next release
"""

from kit._base.deprecated import moved
from kit.cluster import __all__ as _names

__all__: list[str] = []

__getattr__ = moved(__name__, dict.fromkeys(_names, "kit.cluster"))
