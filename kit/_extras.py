"""Kit's name on the package index, and the install line an optional feature's error gives.

The import name is ``kit``; the distribution is :data:`DISTRIBUTION` (``pip
install kit`` installs an unrelated package of that name), as ``hydra-core``
installs ``import hydra``.
"""

from __future__ import annotations

#: Kit's distribution name: what ``pip install`` takes.
DISTRIBUTION = "kit-lab"


def install(extra: str) -> str:
    """Return the command that installs Kit with one of its extras.

    Examples
    --------
    >>> install("search")
    "pip install 'kit-lab[search]'"
    """
    return f"pip install '{DISTRIBUTION}[{extra}]'"
