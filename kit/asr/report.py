"""The decoding part of ``report.html``: scores, the worst utterances aligned, substitutions.

:class:`kit.asr.DecodeRunner` adds :func:`decoding_section` to its report
(and ``kit report`` to every run: the records decide): the WER and CER per set, per
speaker and overall with their intervals, the utterances with the most
errors aligned as sclite prints them (each error marked by its kind), and the
most frequent substitutions. It is drawn from the stored records, as
``kit score`` scores them: a folder's data, never its code.
"""

from __future__ import annotations

import html
from pathlib import Path

from kit.asr._html import scores_html
from kit.asr.rescore import score_run
from kit.store._results import read_result


def decoding_section(folder: Path) -> str:
    """Return the HTML of a decoding run's scores and alignments, from its folder; else "".

    A run whose records are not a decoding run's (no ``ref`` and ``hyp``) has
    no such part: ``kit report`` offers it to every run, and the records decide.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> decoding_section(Path(tempfile.mkdtemp()))
    ''
    """
    try:
        result = read_result(folder)
    except (OSError, ValueError):  # no run stored there
        return ""
    first = next((r for r in result.records if r is not None), None)
    if not (isinstance(first, dict) and "ref" in first and "hyp" in first):
        return ""
    try:
        scores = score_run(folder, result=result)
    except ValueError as exc:  # a normaliser of the run's own, which Kit does not import
        return f"<h3>Decoding</h3><p class='kit-asr-note'>{html.escape(str(exc))}</p>"
    return scores_html(scores)
