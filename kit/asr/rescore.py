"""Score a finished decoding run again from its stored hypotheses: no decoding, any normaliser.

``kit score OUTPUT_DIR [--normalizer NAME] [--max-wer X] [--max-cer X]``
runs :func:`score_folder`: each utterance's stored reference and hypothesis
are normalised and aligned again (:func:`kit.asr.wer.score`), the
WER and CER tables are printed overall and per speaker (and per test set,
when the records name one), ``metrics.json`` is written beside the run, and
the gate decides the exit code. A sweep's folder is scored trial by trial.

Reading a folder never runs code: records are read as data, and a
normaliser of your own is imported only when you name it on the command
line, never because a stored config names it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit._base.atomic import atomic_file
from kit.asr._html import scores_html
from kit.asr._stored import decoded, runs_in, stored_normalizer
from kit.asr.align import Alignment
from kit.asr.wer import MarkupError, corpus_cer, corpus_wer, scored
from kit.result import RunResult
from kit.store._results import read_result

#: What ``kit score --metric`` may print and gate.
METRICS = ("wer", "cer")
#: How many of the worst utterances ``metrics.json`` keeps, aligned.
WORST = 20
#: The file ``kit score`` writes beside the run.
METRICS_FILE = "metrics.json"


def interval(
    records: Sequence[dict[str, Any]],
    errors: str = "errors",
    total: str = "words",
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Bootstrap interval of a corpus error rate: utterances drawn with replacement.

    Each resample draws as many utterances as there are and takes all their
    errors over all their words (a corpus rate, not a mean of utterances'
    rates); the interval holds the middle ``confidence`` of the resamples.
    None for fewer than two utterances.

    Examples
    --------
    >>> from kit.asr import score
    >>> records = [score("the cat sat", "the cat sat")] * 8 + [score("a dog", "a log")] * 2
    >>> low, high = interval(records)
    >>> 0.0 <= low < corpus_wer(records)["wer"] < high
    True
    """
    if len(records) < 2:
        return None
    import numpy as np

    wrong = np.array([int(r[errors]) for r in records], dtype=np.int64)
    size = np.array([int(r[total]) for r in records], dtype=np.int64)
    if not size.any():
        return None  # no reference word at all: no rate, so no interval
    rng = np.random.default_rng(seed)
    rates = []
    rows = max(1, 2_000_000 // len(records))  # a block of draws at a time: bounded memory
    for done in range(0, resamples, rows):
        shape = (min(rows, resamples - done), len(records))
        draws = rng.integers(0, len(records), size=shape, dtype=np.int32)
        words = size[draws].sum(axis=1)
        # A resample of empty references alone has no rate (not its errors over 1 word).
        with np.errstate(invalid="ignore", divide="ignore"):
            rates.append(np.where(words > 0, wrong[draws].sum(axis=1) / words, np.nan))
    tail = (1 - confidence) / 2
    low, high = np.nanquantile(np.concatenate(rates), [tail, 1 - tail])
    return float(low), float(high)


def totals(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Utterances, WER and CER with their counts and 95% bootstrap intervals.

    Examples
    --------
    >>> from kit.asr import score
    >>> t = totals([score("the cat", "the cut"), score("a dog", "a dog")])
    >>> t["utterances"], t["wer"], t["words"], t["cer"], t["chars"]
    (2, 0.25, 4, 0.1, 10)
    """
    found = {"utterances": len(records), **corpus_wer(records), **corpus_cer(records)}
    found["wer_interval"] = interval(records)
    if "cer" in found:
        found["cer_interval"] = interval(records, "char_errors", "chars")
    return found


def grouped(records: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """:func:`totals` per value of ``key`` (``speaker``, ``set``); empty if no record has one.

    Examples
    --------
    >>> from kit.asr import score
    >>> rows = grouped([{"speaker": "a", **score("x", "x")}, {"speaker": "b", **score("x", "")}],
    ...                "speaker")
    >>> {name: row["wer"] for name, row in rows.items()}
    {'a': 0.0, 'b': 1.0}
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record.get(key) is not None:
            groups.setdefault(str(record[key]), []).append(record)
    return {name: totals(group) for name, group in sorted(groups.items())}


@dataclass(repr=False)
class Scores:
    """One run's scores: overall, per speaker and per set, and the gate's verdict.

    Examples
    --------
    >>> from pathlib import Path
    >>> from kit.asr import score
    >>> scores = Scores(Path("run"), "none", totals([score("a b", "a c"), score("d", "d")]))
    >>> scores  # doctest: +NORMALIZE_WHITESPACE
    <Scores of run (normalizer: none): 2 utterances, WER 33.33% [0.0%, 50.0%],
    CER 33.33% [0.0%, 50.0%]>
    >>> print(scores.table(["wer"]))
                      utts   words   sub   del   ins     WER            95% CI
    all                  2       3     1     0     0  33.33%     [0.0%, 50.0%]
    """

    run: Path
    normalizer: str
    overall: dict[str, Any]
    by_speaker: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_set: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Each gate given (``max_wer``...): its limit, the value and whether it passed.
    gate: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Items of the run with no record (failed or not run): not in the scores.
    missing: int = 0
    #: The most frequent substitutions: ``[ref word, hyp word, count]``, most first.
    top_substitutions: list[list[Any]] = field(default_factory=list)
    #: The utterances with the most word errors, each with its aligned REF/HYP lines.
    worst: list[dict[str, Any]] = field(default_factory=list)
    #: The alignments of ``worst``, in its order (for views; not in ``metrics.json``).
    worst_aligned: list[Alignment] = field(default_factory=list, repr=False)

    @property
    def passed(self) -> bool:
        """Whether every gate given passed (True when none was given)."""
        return all(check["passed"] for check in self.gate.values())

    def to_json(self) -> dict[str, Any]:
        """Return what ``metrics.json`` holds."""
        return {
            "normalizer": self.normalizer,
            "overall": self.overall,
            "by_speaker": self.by_speaker,
            "by_set": self.by_set,
            "gate": self.gate,
            "missing": self.missing,
            "passed": self.passed,
            "top_substitutions": self.top_substitutions,
            "worst": self.worst,
        }

    def table(self, metrics: Sequence[str] = METRICS) -> str:
        """Return the scores as a text table: a row per set, per speaker, and overall.

        Each rate comes with its 95% bootstrap interval over utterances.
        """
        named = [(f"set {k}", v) for k, v in self.by_set.items()]
        named += [(f"speaker {k}", v) for k, v in self.by_speaker.items()]
        # As wide as the longest name: an id is never cut (two chapters of one reader,
        # 1272-128104 and 1272-135031, would print alike).
        width = max([16, *(len(name) + 1 for name, _ in named)])
        head = f"{'':<{width}}{'utts':>6}"
        if "wer" in metrics:
            head += f"{'words':>8}{'sub':>6}{'del':>6}{'ins':>6}{'WER':>8}{'95% CI':>18}"
        if "cer" in metrics:
            head += f"{'chars':>8}{'sub':>6}{'del':>6}{'ins':>6}{'CER':>8}{'95% CI':>18}"
        rows = [head]
        for name, row in [*named, ("all", self.overall)]:
            line = f"{name:<{width}}{row['utterances']:>6}"
            if "wer" in metrics:
                line += f"{row['words']:>8}{row['substitutions']:>6}{row['deletions']:>6}"
                line += f"{row['insertions']:>6}{row['wer']:>8.2%}{_ci(row.get('wer_interval'))}"
            if "cer" in metrics and "cer" in row:
                line += f"{row['chars']:>8}{row['char_substitutions']:>6}"
                line += f"{row['char_deletions']:>6}{row['char_insertions']:>6}{row['cer']:>8.2%}"
                line += _ci(row.get("cer_interval"))
            rows.append(line)
        return "\n".join(rows)

    def __repr__(self) -> str:
        """One line: the run, the normaliser, WER and CER with their intervals."""
        overall = self.overall
        rates = [
            f"{name.upper()} {overall[name]:.2%}{_bracket(overall.get(f'{name}_interval'))}"
            for name in METRICS
            if name in overall
        ]
        return (
            f"<Scores of {self.run} (normalizer: {self.normalizer}): "
            f"{overall.get('utterances', 0)} utterances, {', '.join(rates)}>"
        )

    def _repr_html_(self) -> str:
        """Show the scores in a notebook as a report does: table, alignments, substitutions."""
        return scores_html(self)

    def alignments(self, n: int = 3) -> str:
        """Return the ``n`` utterances with the most errors, aligned, and the top substitutions."""
        lines = []
        for utterance in self.worst[:n]:
            lines.append(
                f"{utterance['id']} ({utterance['errors']} errors in {utterance['words']} words)"
            )
            lines.extend(f"  {line}" for line in utterance["alignment"].splitlines())
        if self.top_substitutions:
            pairs = ", ".join(f"{r} -> {h} ({c})" for r, h, c in self.top_substitutions[:10])
            lines.append(f"top substitutions: {pairs}")
        return "\n".join(lines)


def _bracket(bounds: Sequence[float] | None) -> str:
    return f" [{bounds[0]:.1%}, {bounds[1]:.1%}]" if bounds else ""


def _ci(bounds: Sequence[float] | None) -> str:
    """Return a rate's interval as the table prints it, e.g. ``[5.1%, 14.2%]``."""
    if not bounds:
        return f"{'':>18}"
    # Wide enough for rates over 100% (many insertions): [105.3%, 158.8%] keeps a space.
    return f"{f'[{bounds[0]:.1%}, {bounds[1]:.1%}]':>18}"


def score_run(
    run: Path,
    normalize_with: str | None = None,
    gates: dict[str, float] | None = None,
    metrics: Sequence[str] = METRICS,
    result: RunResult | None = None,
) -> Scores:
    """Score the stored hypotheses of the run in ``run`` again; decide the gates.

    ``gates`` maps ``wer``/``cer`` to the most each may be (``{"wer": 0.1}``);
    characters are aligned only when ``metrics`` or ``gates`` ask for the CER.
    ``result`` is the run's result if the caller has read it already.
    """
    name = normalize_with if normalize_with is not None else stored_normalizer(run)
    chars = "cer" in metrics or "cer" in (gates or {})
    if result is None:
        result = read_result(run)
    records: list[dict[str, Any]] = []
    alignments: list[Alignment] = []
    for _, record in decoded(result.records, str(run), "scored"):
        try:
            found, alignment = scored(str(record["ref"]), str(record["hyp"]), name, chars=chars)
        except MarkupError as exc:  # say which utterance of which run
            raise MarkupError(f"{run}: utterance {record.get('id')!r}: {exc}") from None
        # What the run stored of its own scoring is left behind: only these counts count.
        kept: dict[str, Any] = {
            key: record[key] for key in ("id", "speaker", "set", "ref", "hyp") if key in record
        }
        records.append({**kept, **found})
        alignments.append(alignment)
    scores = Scores(
        run=run,
        normalizer=name,
        overall=totals(records),
        by_speaker=grouped(records, "speaker"),
        by_set=grouped(records, "set"),
        missing=len(result.records) - len(records),
    )
    substituted: Counter[tuple[str, str]] = Counter()
    aligned = []
    for record, alignment in zip(records, alignments, strict=True):
        substituted.update(alignment.substitutions())
        aligned.append((int(record["errors"]), record, alignment))
    scores.top_substitutions = [[r, h, n] for (r, h), n in substituted.most_common(20)]
    # The worst first; among equals, the run's order.
    ranked = sorted(enumerate(aligned), key=lambda pair: (-pair[1][0], pair[0]))
    scores.worst = [
        {
            "id": record.get("id"),
            "speaker": record.get("speaker"),
            "errors": errors,
            "words": int(record["words"]),
            "alignment": alignment.pretty(),
        }
        for _, (errors, record, alignment) in ranked[:WORST]
        if errors
    ]
    scores.worst_aligned = [alignment for _, (_, _, alignment) in ranked[: len(scores.worst)]]
    for metric, limit in (gates or {}).items():
        # No reference word (or character) scored: no rate to judge, never a pass.
        counted = scores.overall.get("words" if metric == "wer" else "chars")
        value = scores.overall.get(metric) if counted else None
        scores.gate[f"max_{metric}"] = {
            "limit": limit,
            "value": value,
            "passed": value is not None and value <= limit,
        }
    return scores


def score_folder(
    folder: str | os.PathLike[str],
    normalize_with: str | None = None,
    gates: dict[str, float] | None = None,
    write: bool = True,
    metrics: Sequence[str] = METRICS,
) -> list[Scores]:
    """Score the run in ``folder`` (or each trial of a sweep) again; write ``metrics.json``.

    Examples
    --------
    >>> import tempfile
    >>> try:
    ...     score_folder(tempfile.mkdtemp())
    ... except FileNotFoundError as exc:
    ...     print(str(exc).split(" holds")[1])
    no run or sweep; give the output_dir of one
    """
    unknown = sorted(set(gates or {}) - set(METRICS))
    if unknown:
        raise ValueError(f"no gate for {', '.join(unknown)}: gates exist for wer and cer")
    every = []
    for run, _ in runs_in(Path(folder)):
        scores = score_run(run, normalize_with, gates, metrics)
        if write:
            try:
                with atomic_file(run / METRICS_FILE, "w", parents=False) as fh:
                    json.dump(scores.to_json(), fh, indent=1)
                    fh.write("\n")
            except PermissionError:
                raise PermissionError(
                    f"cannot write {run / METRICS_FILE}: the folder is not yours to write; "
                    "pass --no-write to print the scores only"
                ) from None
        every.append(scores)
    return every
