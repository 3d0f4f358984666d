"""The decoding part of ``report.html``: scores, the worst utterances aligned, substitutions.

:class:`kit.asr.DecodeRunner` adds :func:`decoding_section` to its report
(and ``kit report`` to a decoding run's): the WER and CER per set, per
speaker and overall with their intervals, the utterances with the most
errors aligned as sclite prints them (each error marked by its kind), and the
most frequent substitutions. It is drawn from the stored records, as
``kit score`` scores them: a folder's data, never its code.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from kit.asr._html import scores_html
from kit.asr.rescore import score_run
from kit.store._results import read_result


def decoding_section(folder: Path) -> str:
    """Return the HTML of a decoding run's scores and alignments, from its folder.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> decoding_section(Path(tempfile.mkdtemp()))
    ''
    """
    try:
        scores = score_run(folder)
    except ValueError as exc:  # no decoding run's records, or a normaliser of its own
        return f"<h3>Decoding</h3><p class='kit-asr-note'>{html.escape(str(exc))}</p>"
    except OSError:  # no run stored there
        return ""
    if not scores.overall.get("utterances"):
        return ""
    return scores_html(scores)


def sections_for(folder: Path) -> tuple[Any, ...]:
    """Return ``(decoding_section,)`` if ``folder``'s records are a decoding run's, else ``()``.

    What ``kit report`` adds to a run's page without the runner at hand: the
    records decide, as data.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> sections_for(Path(tempfile.mkdtemp()))
    ()
    """
    try:
        records = read_result(folder).records
    except (OSError, ValueError):
        return ()
    first = next((r for r in records if r is not None), None)
    decoding = isinstance(first, dict) and "ref" in first and "hyp" in first
    return (decoding_section,) if decoding else ()
