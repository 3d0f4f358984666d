"""Scores as HTML: the table per set and speaker, the worst utterances aligned, substitutions.

Drawn in a run's ``report.html`` and where a notebook shows a
:class:`kit.asr.Scores`. Every text from a run (ids, words) is escaped.
"""

from __future__ import annotations

import html
from typing import Any

#: How many of the worst utterances the report shows aligned.
SHOWN = 10

# Every rule under .kit-scores, so JupyterLab's own table and pre rules do not win.
STYLE = (
    "<style>"
    ".kit-scores .kit-wide{overflow-x:auto}"
    ".kit-scores table.kit-asr td,.kit-scores table.kit-asr th"
    "{padding:2px 6px;text-align:right;white-space:nowrap}"
    ".kit-scores table.kit-asr td:first-child,.kit-scores table.kit-asr th:first-child"
    "{text-align:left}"
    ".kit-scores table.kit-substitutions td,.kit-scores table.kit-substitutions th"
    "{text-align:left}"
    ".kit-scores pre.kit-aligned{background:#f8f9fa;padding:6px;margin:4px 0 12px}"
    ".kit-scores mark.kit-S{background:#ffe08a}.kit-scores mark.kit-D{background:#ffb3b3}"
    ".kit-scores mark.kit-I{background:#b3d4ff}"
    "</style>"
)


def scores_html(scores: Any) -> str:
    """Return a :class:`~kit.asr.Scores` as HTML: heading, table, alignments, substitutions."""
    return (
        STYLE
        + "<div class='kit-scores'>"
        + f"<h3>Decoding scores (normalizer: {html.escape(scores.normalizer)})</h3>"
        # A wide table scrolls sideways in a narrow notebook, rather than being cut off.
        + f"<div class='kit-wide'>{scores_table(scores)}</div>"
        + aligned_html(scores)
        + "</div>"
    )


def scores_table(scores: Any) -> str:
    """WER and CER with S/D/I and intervals: a row per set, per speaker, and overall."""
    columns = ["", "utts", "words", "sub", "del", "ins", "WER", "95% CI"]
    chars = "cer" in scores.overall
    if chars:
        columns += ["chars", "sub", "del", "ins", "CER", "95% CI"]
    named = [(f"set {k}", v) for k, v in scores.by_set.items()]
    named += [(f"speaker {k}", v) for k, v in scores.by_speaker.items()]
    body = []
    for name, row in [*named, ("all", scores.overall)]:
        cells: list[Any] = [name, row["utterances"], row["words"], row["substitutions"]]
        cells += [row["deletions"], row["insertions"], f"{row['wer']:.2%}"]
        cells.append(_interval(row.get("wer_interval")))
        if chars and "cer" in row:
            cells += [row["chars"], row["char_substitutions"], row["char_deletions"]]
            cells += [row["char_insertions"], f"{row['cer']:.2%}"]
            cells.append(_interval(row.get("cer_interval")))
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    return f"<table class='kit-asr'><tr>{head}</tr>{''.join(body)}</table>"


def aligned_html(scores: Any, shown: int = SHOWN) -> str:
    """Return the ``shown`` utterances with the most errors, aligned, and the top substitutions."""
    parts = []
    if scores.worst:
        parts.append(
            f"<h3>The {min(shown, len(scores.worst))} utterances with the most errors</h3>"
            "<p>Errors in capitals: <mark class='kit-S'>substituted</mark>, "
            "<mark class='kit-D'>deleted</mark>, <mark class='kit-I'>inserted</mark>.</p>"
        )
    for utterance, alignment in zip(scores.worst[:shown], scores.worst_aligned, strict=False):
        who = f", {utterance['speaker']}" if utterance.get("speaker") else ""
        parts.append(
            f"<div class='kit-utterance'><b>{html.escape(str(utterance['id']))}</b>"
            f"{html.escape(who)}: {_count(utterance['errors'], 'error')} in "
            f"{_count(utterance['words'], 'word')}"
            f"<pre class='kit-aligned'>{alignment.html()}</pre></div>"
        )
    if scores.top_substitutions:
        rows = "".join(
            f"<tr><td>{html.escape(ref)}</td><td>{html.escape(hyp)}</td><td>{count}</td></tr>"
            for ref, hyp, count in scores.top_substitutions[:SHOWN]
        )
        parts.append(
            "<h3>Top substitutions</h3><table class='kit-asr kit-substitutions'>"
            f"<tr><th>reference</th><th>hypothesis</th><th>times</th></tr>{rows}</table>"
        )
    return "".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _interval(bounds: Any) -> str:
    return f"[{bounds[0]:.1%}, {bounds[1]:.1%}]" if bounds else ""
