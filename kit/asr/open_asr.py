"""The Open ASR Leaderboard's scoring of a decoding run: its WER and its RTFx.

``kit score OUTPUT_DIR --convention open-asr`` scores a run's stored
hypotheses as the leaderboard's ``normalizer/eval_utils.py``
(``score_results``) scores an English set: Whisper's English normaliser on
both sides (Kit's own step that splits digit strings is left out), the
utterances whose normalised reference is empty or "ignore time segment in
scoring" left out (the leaderboard never decodes those), and kaldialign's
``batch_error_rate`` with ``merge_compounds=True`` (a split compound, "white
paper" for "whitepaper", counts as no error either way). Its WER is a
percentage rounded to two places; its RTFx is seconds of audio over seconds
of transcription, without each recognizer's first call (its warm-up, which
the leaderboard runs before it starts the clock) and without reading the
audio (a record's ``decode_seconds`` is the recognizer's call alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kit._base.extras import install

#: What the leaderboard's data preparation drops before decoding (a reference's normal form).
DROPPED = ("", "ignore time segment in scoring")


@dataclass(frozen=True)
class OpenASRScore:
    """A run's WER and RTFx as the Open ASR Leaderboard computes them."""

    #: Word error rate in percent, rounded to two places (the leaderboard's ``WER = x %``).
    wer: float
    substitutions: int
    deletions: int
    insertions: int
    #: Utterances scored, and those left out as the leaderboard leaves them out.
    utterances: int
    dropped: int
    #: Seconds of audio over seconds of transcription (rounded to four places); None
    #: when a scored record has no duration or time, as the leaderboard says none.
    rtfx: float | None

    def line(self) -> str:
        """Say the score as the leaderboard prints it.

        >>> print(OpenASRScore(5.29, 3, 1, 0, 12, 0, 51.7512).line())
        WER = 5.29 %, RTFx = 51.75 (12 utterances; S 3, D 1, I 0)
        """
        rtfx = "" if self.rtfx is None else f", RTFx = {self.rtfx:0.2f}"
        dropped = f", {self.dropped} left out" if self.dropped else ""
        return (
            f"WER = {self.wer:0.2f} %{rtfx} ({self.utterances} utterances{dropped}; "
            f"S {self.substitutions}, D {self.deletions}, I {self.insertions})"
        )


def _english() -> Any:
    try:
        from whisper_normalizer.english import EnglishTextNormalizer
    except ImportError:
        raise ImportError(
            f"--convention open-asr needs whisper-normalizer: {install('asr')}"
        ) from None
    return EnglishTextNormalizer()


def open_asr_score(records: Sequence[dict[str, Any]]) -> OpenASRScore:
    """Score records (``ref``, ``hyp``; ``duration``, ``decode_seconds``) as the leaderboard.

    Examples
    --------
    >>> records = [
    ...     {"ref": "A white paper.", "hyp": "a whitepaper", "duration": 2, "decode_seconds": 0.1},
    ...     {"ref": "Ten dogs", "hyp": "10 cats", "duration": 2, "decode_seconds": 0.1},
    ...     {"ref": "ignore time segment in scoring", "hyp": "x", "duration": 1.0,
    ...      "decode_seconds": 0.1},
    ... ]
    >>> score = open_asr_score(records)
    >>> score.wer, score.substitutions, score.dropped, score.rtfx
    (20.0, 1, 1, 20.0)
    """
    try:
        from kaldialign import batch_error_rate
    except ImportError:
        raise ImportError(f"--convention open-asr needs kaldialign: {install('asr')}") from None
    normalize = _english()
    refs, hyps, kept = [], [], []
    for record in records:
        ref = normalize(str(record["ref"]))
        if ref.strip() in DROPPED:
            continue
        refs.append(tuple(ref.split()))
        hyps.append(tuple(normalize(str(record["hyp"])).split()))
        kept.append(record)
    counted = batch_error_rate(refs, hyps, merge_compounds=True) if refs else {}
    warm = [r for r in kept if not r.get("warmup")]
    durations = [float(r.get("duration") or 0.0) for r in warm]
    times = [float(r.get("decode_seconds") or 0.0) for r in warm]
    timed = bool(warm) and all(durations) and all(times)
    return OpenASRScore(
        wer=round(100 * float(counted.get("err_rate", 0.0)), 2),
        substitutions=int(counted.get("sub", 0)),
        deletions=int(counted.get("del", 0)),
        insertions=int(counted.get("ins", 0)),
        utterances=len(kept),
        dropped=len(records) - len(kept),
        rtfx=round(sum(durations) / sum(times), 4) if timed else None,
    )
