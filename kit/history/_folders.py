"""Where a person's runs go by default: a folder of their own under ``runs/``."""

from __future__ import annotations

import os
import re
from pathlib import Path


def user_folder(notebook: str | None = None, *, root: str | os.PathLike[str] = "runs") -> Path:
    """Return ``runs/<user>/<notebook>``: this person's runs, apart from everyone else's.

    The user is ``JUPYTERHUB_USER``, else the login name; the notebook is the
    one this kernel runs (Jupyter says which, in ``JPY_SESSION_NAME``), else
    ``notebook``. So attendees sharing one server and one notebooks folder,
    or one login with a notebook copy each, never write into or number runs
    in one folder; the same notebook finds its runs again after a restart.

    Examples
    --------
    >>> import os
    >>> os.environ["JUPYTERHUB_USER"] = "ada"
    >>> user_folder("/home/ada/04_workshop-copy.ipynb").as_posix()
    'runs/ada/04_workshop-copy'
    >>> user_folder("../../etc/passwd").as_posix()  # a name, never a way out of runs/
    'runs/ada/passwd'
    >>> del os.environ["JUPYTERHUB_USER"]
    """
    from kit.cluster._seats import who

    name = notebook or os.environ.get("JPY_SESSION_NAME") or "notebook"
    user = Path(root) / _safe(who())
    folder = user / _safe(Path(name).stem or "notebook")
    # ``runs/`` may be shared: the two names below it are Kit's choice, so Kit checks them.
    # A link planted there would write this person's runs elsewhere; a folder another
    # user made there is theirs to read.
    for part in (user, folder):
        _check_own(part)
    return folder


def _check_own(path: Path) -> None:
    """Refuse ``path`` if it is a link, or a folder another user owns (it may not exist yet)."""
    from kit._base.files import UnsafeFileError, refuse_links

    refuse_links(path.parent, (path.name,))
    try:
        owner = path.stat().st_uid
    except FileNotFoundError:
        return
    if owner != os.getuid():
        raise UnsafeFileError(
            f"{path} belongs to another user (uid {owner}): Kit keeps your runs in a folder of "
            "your own, which someone else could read or change there; remove it, or pass a "
            "folder of your own (runs_dir=..., output_dir=...)"
        )


def _safe(part: str) -> str:
    """Return ``part`` as one folder name: word characters, dots, dashes; never '.' or '..'."""
    return re.sub(r"[^\w.-]", "_", part).strip(".") or "_"
