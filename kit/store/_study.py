"""A search's Optuna study: a journal file in the sweep folder, opened without Optuna's lock.

Shared by the search that writes it (:mod:`kit._sweeps.search`) and the readers of a
sweep folder (:class:`~kit.detached.DetachedSweep`); Optuna is an optional extra,
imported when a study is opened.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit._base.errors import KitError
from kit._base.extras import install
from kit.store._rundir import SweepDir

#: The study's name in the journal (one study a sweep folder).
STUDY_NAME = "kit"


def require_optuna() -> Any:
    """Return the ``optuna`` module, or raise ImportError naming the extra to install."""
    try:
        import optuna
    except ImportError:
        raise ImportError(
            f"a search needs optuna: {install('search')} (or pip install optuna)"
        ) from None
    return optuna


class _SoleWriter:
    """Optuna's journal lock for a study only the sweep's driver writes: nothing to wait for."""

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        pass


def journal_storage(path: Path) -> Any:
    """Return Optuna's journal storage on ``path``, without Optuna's file lock.

    Only the sweep's driver writes the journal and readers take no lock, while
    a lock left by a killed driver would hold a resume up for its grace period
    (30 s).
    """
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    lock: Any = _SoleWriter()
    return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))


def open_study(
    folder: Path, direction: str, sampler: Any = None, pruner: Any = None, seed: int | None = 0
) -> Any:
    """Open (or make) the search's study: Optuna's journal file in ``folder``."""
    optuna = require_optuna()
    path = SweepDir(folder).study
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise KitError(f"{path} is not a regular file: a search's study must be one")
    _trim_torn_line(path)
    study = read_journal(
        path,
        lambda storage: _quietly(optuna.create_study)(
            storage=storage,
            study_name=STUDY_NAME,
            direction=direction,
            sampler=sampler,
            pruner=pruner if pruner is not None else optuna.pruners.NopPruner(),
            load_if_exists=True,
        ),
    )
    if sampler is None:
        # Seeded past the trials already made, so a resumed search does not propose
        # its first points again; constant_liar, so trials running side by side are
        # not all asked the same point.
        offset = len(study.get_trials(deepcopy=False))
        study.sampler = optuna.samplers.TPESampler(
            seed=None if seed is None else seed + offset, constant_liar=True
        )
    return study


def _quietly(make: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``make``, run without Optuna's "A new study created" line.

    A notebook shows a library's log line as an error; Kit says what a search
    does itself. Only that logger, only while the study is made: Optuna's
    own verbosity, the user's to set, is left as it is.
    """

    def made(*args: Any, **kwargs: Any) -> Any:
        logger = logging.getLogger("optuna.storages")  # where each storage says it
        level = logger.level
        logger.setLevel(logging.WARNING)
        try:
            return make(*args, **kwargs)
        finally:
            logger.setLevel(level)

    return made


def read_journal(path: Path, study_of: Callable[[Any], Any]) -> Any:
    """Return ``study_of(storage)`` on the journal at ``path``; a bad journal is named.

    A journal is the sweep folder's data: one not as Kit's driver wrote it
    (edited, or another program's) is a KitError naming its path, not
    Optuna's own error from deep in its replay.
    """
    try:
        study = study_of(journal_storage(path))
        study.get_trials(deepcopy=False)  # every line replayed: a bad one fails here
    except (KitError, ImportError):
        raise
    except Exception as exc:
        raise KitError(
            f"{path}: the search's study (Optuna's journal) cannot be read "
            f"({type(exc).__name__}: {str(exc)[:200]}); it is not as Kit's driver wrote "
            "it: move it aside to start the search afresh in this folder, or search into "
            "another folder"
        ) from None
    return study


def _trim_torn_line(path: Path) -> None:
    """Drop a last line the driver was killed while writing: the next one would join it."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)
