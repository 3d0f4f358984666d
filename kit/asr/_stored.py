"""Reading decoding runs' folders: which runs a folder holds, and how they were scored.

A folder may be a colleague's: nothing here follows a link or imports what
the folder names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from kit._base.files import UnsafeFileError, open_file
from kit.asr.wer import NORMALIZERS
from kit.store._rundir import RunDir, SweepDir


def runs_in(folder: Path) -> list[tuple[Path, str]]:
    """Return the runs in ``folder`` (itself, or a sweep's trials), each with its sub-folder."""
    if RunDir(folder).holds_run():
        return [(folder, "")]
    if SweepDir(folder).holds_sweep():
        trials = sorted(
            child
            for child in folder.iterdir()
            # A planted link is not followed: it may point anywhere.
            if SweepDir.is_trial_name(child.name) and not child.is_symlink() and child.is_dir()
        )
        return [(trial, trial.name) for trial in trials if RunDir(trial).holds_run()]
    raise FileNotFoundError(f"{folder} holds no run or sweep; give the output_dir of one")


def stored_normalizer(run: Path) -> str:
    """Return the normaliser the run's stored config chose if it is Kit's; else ``whisper``.

    A dotted path stored in a folder is not followed (importing it would run
    code the folder names): :func:`score_folder` asks for it on the command line.
    """
    try:
        with open_file(RunDir(run).config) as fh:
            config = yaml.safe_load(fh)
    except (OSError, UnsafeFileError, yaml.YAMLError):
        return "whisper"
    scoring = config.get("scoring") if isinstance(config, dict) else None
    chosen = scoring.get("normalizer") if isinstance(scoring, dict) else None
    if chosen is None:
        return "whisper"
    if isinstance(chosen, str) and chosen in NORMALIZERS:
        return chosen
    # The folder's text is not echoed as a command to run: it may name anything
    # (os.system, say), and a user pasting the suggestion would run what it names.
    raise ValueError(
        f"{run}: the run was scored with a normaliser of its own ({str(chosen)[:60]!r}); "
        "Kit does not import code a folder names: choose one with --normalizer (whisper, "
        "basic, none, or the dotted path of your own function, after reading it)"
    )


def decoded(records: Sequence[Any], where: str, doing: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(position, record)`` of a decoding run's records; failed items (None) left out.

    A record without ``ref`` and ``hyp`` is no decoding run's: an error naming
    the item and what ``doing`` (``exported``, ``scored``) needs.
    """
    for position, record in enumerate(records):
        if record is None:
            continue
        if not isinstance(record, dict) or "ref" not in record or "hyp" not in record:
            raise ValueError(
                f"{where}, item {position}: the record has no 'ref' and 'hyp'; only a decoding "
                f"run (kit.asr's DecodeRunner) can be {doing}"
            )
        yield position, record
