"""The notebooks Kit ships, and copying them out (``kit notebooks DIR``).

A built wheel installs them as data under ``<prefix>/share/kit-lab/notebooks``;
in a checkout they are the repository's ``notebooks/``.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

from kit._base.errors import KitError
from kit._base.extras import DISTRIBUTION
from kit._base.files import open_file


def shipped() -> Path:
    """Return the folder holding the notebooks Kit ships.

    Raises
    ------
    KitError
        If neither an installed copy nor a checkout's ``notebooks/`` is found.
    """
    installed = Path(sysconfig.get_path("data")) / "share" / DISTRIBUTION / "notebooks"
    checkout = Path(__file__).resolve().parents[2] / "notebooks"
    for folder in (installed, checkout):
        if any(folder.glob("*.ipynb")):
            return folder
    raise KitError(
        f"no notebooks found in {installed} or {checkout}: install Kit from its wheel "
        f"(pip install {DISTRIBUTION}) or use a checkout of its repository"
    )


def copy_notebooks(into: str | Path) -> list[Path]:
    """Copy the shipped notebooks into folder ``into``; return the files written.

    A notebook already there is left as it is (it may hold someone's work):
    the error names the ones in the way.

    Examples
    --------
    >>> import tempfile
    >>> sorted(p.name for p in copy_notebooks(tempfile.mkdtemp()))[0]
    '01_quickstart.ipynb'
    """
    target = Path(into)
    if target.exists() and not target.is_dir():
        raise KitError(f"{target} is a file: give a folder to copy the notebooks into")
    sources = sorted(shipped().glob("*.ipynb"))
    # lexists: a link planted under a notebook's name counts too (never written through).
    taken = [target / s.name for s in sources if os.path.lexists(target / s.name)]
    if taken:
        names = ", ".join(p.name for p in taken)
        raise KitError(
            f"{target} already holds {names}: nothing was copied; move them away (they "
            "may hold your work) or choose another folder"
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        # "x" with O_NOFOLLOW: a name planted since the check above is refused, not followed.
        with source.open("rb") as src, open_file(target / source.name, "xb") as dst:
            shutil.copyfileobj(src, dst)
        written.append(target / source.name)
    return written
