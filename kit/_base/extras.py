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


def require(feature: str, extra: str, *modules: str) -> None:
    """Raise one clear ImportError when a module ``feature`` needs is not installed.

    Called at the top of an optional wing (``kit.rl``, ``kit.widgets``), so
    importing it without its extra names the extra, not the first module that
    happened to be missing. Nothing is imported: ``find_spec`` only looks.

    Parameters
    ----------
    feature
        What the user tried to use, as the message names it (``"kit.rl"``).
    extra
        The extra of ``kit-lab`` that installs the modules.
    *modules
        Top-level module names the feature imports.

    Examples
    --------
    >>> require("kit.config", "none", "omegaconf")
    >>> require("kit.example", "demo", "no_such_module_here")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: kit.example needs no_such_module_here, which is not installed: ...[demo]'
    """
    from importlib.util import find_spec

    missing = [name for name in modules if find_spec(name) is None]
    if missing:
        raise ModuleNotFoundError(
            f"{feature} needs {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed: {install(extra)}",
            name=missing[0],
        )
