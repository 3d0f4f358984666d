"""Write a decoding run's references and hypotheses in the files other scoring tools read.

``trn`` is sclite's transcript format, one ``words (speaker-utterance)`` line
per utterance (the id as sclite's ``-i rm`` reads it, so its per-speaker
tables are Kit's), with the texts normalised exactly as Kit scored them, so

    sclite -r ref.trn trn -h hyp.trn trn -i rm

reports the substitutions, deletions, insertions and reference words Kit
reports (and ``sclite -c`` its character counts). ``scp`` is ESPnet3's
per-test-set ``ref.scp``/``hyp.scp``: ``utterance-id text`` lines with the
texts as the recognizer gave them (ESPnet's scoring normalises on its own).

A sweep's folder is written one sub-folder per trial. ``kit export DIR
--format trn -o OUT`` runs :func:`export`. Reading a folder never runs code:
only data records are read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit._base.atomic import atomic_file
from kit.asr._stored import decoded, runs_in, stored_normalizer
from kit.asr.wer import normalizer
from kit.store._results import read_result

FORMATS = ("trn", "scp")
# An utterance id is one token: trn closes it with ")" and scp ends it at a space.
_ID = re.compile(r"[^\s()]+")


def sclite_id(uid: str, speaker: Any = None) -> str:
    """Return the trn id of an utterance: ``speaker-utterance``, as sclite's ``-i rm`` splits it.

    An id that already starts with its speaker and a dash stays as it is; an
    utterance without a speaker is the speaker ``all``'s.

    Examples
    --------
    >>> sclite_id("s01", "ann"), sclite_id("ann-s01", "ann"), sclite_id("s01")
    ('ann-s01', 'ann-s01', 'all-s01')
    """
    prefix = f"{speaker if speaker not in (None, '') else 'all'}-"
    return uid if uid.startswith(prefix) else prefix + uid


def lines(
    records: Sequence[Any], format: str, where: str = "the run", normalize_with: str = "whisper"
) -> tuple[str, str]:
    """Return the reference and hypothesis files' text for decoded ``records``.

    ``trn`` texts are normalised with ``normalize_with``, as Kit scores them;
    ``scp`` texts are as decoded. Records that failed (None) are left out of
    both files, so the two always hold the same utterances.

    Examples
    --------
    >>> records = [{"id": "u1", "speaker": "ann", "ref": "Hello, world.", "hyp": "hello word"}]
    >>> print(*lines(records, "trn"), sep="")
    hello world (ann-u1)
    hello word (ann-u1)
    >>> print(*lines(records, "scp"), sep="")
    u1 Hello, world.
    u1 hello word
    """
    if format not in FORMATS:
        raise ValueError(f"--format {format!r}: choose one of {', '.join(FORMATS)}")
    norm = normalizer(normalize_with) if format == "trn" else None
    refs, hyps = [], []
    seen: set[str] = set()
    for position, record in decoded(records, where, "exported"):
        uid = str(record.get("id", position))
        if _ID.fullmatch(uid) is None:
            raise ValueError(
                f"{where}, item {position}: utterance id {uid!r} has a space or a parenthesis, "
                f"which {format} files cannot hold; give your utterances ids without them"
            )
        if uid in seen:
            raise ValueError(
                f"{where}, item {position}: utterance id {uid!r} appears twice; sclite and "
                "ESPnet pair utterances by id, so each needs its own"
            )
        seen.add(uid)
        ref, hyp = (
            " ".join(str(record[key] if norm is None else norm(str(record[key]))).split())
            for key in ("ref", "hyp")
        )
        if format == "trn":
            trn_id = sclite_id(uid, record.get("speaker"))
            if _ID.fullmatch(trn_id) is None:
                raise ValueError(
                    f"{where}, item {position}: speaker {record.get('speaker')!r} has a space "
                    "or a parenthesis, which trn ids cannot hold; name your speakers without them"
                )
            refs.append(f"{ref} ({trn_id})\n")
            hyps.append(f"{hyp} ({trn_id})\n")
        else:
            refs.append(f"{uid} {ref}".rstrip() + "\n")
            hyps.append(f"{uid} {hyp}".rstrip() + "\n")
    return "".join(refs), "".join(hyps)


def export(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    format: str,
    normalize_with: str | None = None,
) -> list[Path]:
    """Write ``ref.<format>`` and ``hyp.<format>`` for the run (or each trial) in ``folder``.

    ``trn`` texts are normalised with ``normalize_with``, by default the
    normaliser the run scored with (as :func:`~kit.asr.score_folder`
    picks it). Returns the files written.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     export(tempfile.mkdtemp(), tempfile.mkdtemp(), "trn")
    ... except FileNotFoundError as exc:
    ...     print(str(exc).split(" holds")[1])
    no run or sweep; give the output_dir of one
    """
    if format not in FORMATS:
        raise ValueError(f"--format {format!r}: choose one of {', '.join(FORMATS)}")
    written = []
    for run, sub in runs_in(Path(folder)):
        result = read_result(run)
        name = normalize_with if normalize_with is not None else stored_normalizer(run)
        texts = lines(result.records, format, where=str(run), normalize_with=name)
        target = Path(out) / sub
        target.mkdir(parents=True, exist_ok=True)
        for name, text in zip(("ref", "hyp"), texts, strict=True):
            path = target / f"{name}.{format}"
            with atomic_file(path, "w") as fh:
                fh.write(text)
            written.append(path)
    return written
