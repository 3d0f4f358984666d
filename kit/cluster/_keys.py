"""Who may cancel a run on a shared cluster: its owner, by a key, and the class's teacher.

Each run makes a random key when it takes its seat; the scheduler keeps only
its digest, and only the run's own session holds the key. The teacher claims
the class once (``kit cluster start --class`` or ``kit cluster claim``): a
random token whose digest the scheduler keeps, written to a file in the
teacher's config folder that only the teacher can read. Cancelling someone's
run takes one of the two; a name (``JUPYTERHUB_USER``) proves nothing.

This protects a class from accidents and casual misuse, not from a hostile
attendee: a Dask client can run code on the scheduler and the workers.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path

from kit._base.atomic import atomic_file

#: A key or token's digest, as the scheduler keeps it.
DIGEST = re.compile(r"[0-9a-f]{64}")


def new_key() -> str:
    """Return a fresh random key (a run's, or a class's teacher token).

    Examples
    --------
    >>> len(new_key()), new_key() != new_key()
    (64, True)
    """
    return secrets.token_hex(32)


def digest(key: str) -> str:
    """Return the digest the scheduler keeps of ``key``.

    Examples
    --------
    >>> DIGEST.fullmatch(digest("abc")) is not None
    True
    """
    return hashlib.sha256(key.encode()).hexdigest()


def token_path(scheduler_id: str) -> Path:
    """Return where the teacher's token for the scheduler ``scheduler_id`` is kept.

    In ``$XDG_CONFIG_HOME/kit/classes`` (``~/.config`` by default), named by
    the scheduler's id, so a scheduler started again is claimed anew.

    Examples
    --------
    >>> token_path("Scheduler-1").name.endswith(".token")
    True
    """
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    name = hashlib.sha256(scheduler_id.encode()).hexdigest()[:24]
    return home / "kit" / "classes" / f"{name}.token"


def write_token(scheduler_id: str, token: str) -> Path:
    """Keep ``token`` where only this user can read it; return the file."""
    path = token_path(scheduler_id)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    with atomic_file(path, private=True) as out:
        out.write(token + "\n")
    return path


def read_token(scheduler_id: str) -> str | None:
    """Return this user's teacher token for the scheduler ``scheduler_id``, or None."""
    path = token_path(scheduler_id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as held:
        if os.fstat(held.fileno()).st_uid != os.getuid():
            return None  # not this user's: never trusted
        token = held.read().strip()
    return token or None
