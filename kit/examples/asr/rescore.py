"""Score a finished decoding run again from its stored hypotheses: no decoding, any normaliser.

``kit score OUTPUT_DIR [--normalizer NAME] [--max-wer X] [--max-cer X]``
runs :func:`score_folder`: each utterance's stored reference and hypothesis
are normalised and aligned again (:func:`kit.examples.asr.wer.score`), the
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit._atomic import atomic_file
from kit.examples.asr.stored import runs_in, stored_normalizer
from kit.examples.asr.wer import corpus_cer, corpus_wer, score
from kit.store._results import read_result

#: What ``kit score --metric`` may print and gate.
METRICS = ("wer", "cer")
#: The file ``kit score`` writes beside the run.
METRICS_FILE = "metrics.json"


def totals(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Utterances, WER and CER with their counts, over scored records.

    Examples
    --------
    >>> t = totals([score("the cat", "the cut"), score("a dog", "a dog")])
    >>> t["utterances"], t["wer"], t["words"], t["cer"], t["chars"]
    (2, 0.25, 4, 0.1, 10)
    """
    return {"utterances": len(records), **corpus_wer(records), **corpus_cer(records)}


def grouped(records: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """:func:`totals` per value of ``key`` (``speaker``, ``set``); empty if no record has one.

    Examples
    --------
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


@dataclass
class Scores:
    """One run's scores: overall, per speaker and per set, and the gate's verdict."""

    run: Path
    normalizer: str
    overall: dict[str, Any]
    by_speaker: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_set: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Each gate given (``max_wer``...): its limit, the value and whether it passed.
    gate: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Items of the run with no record (failed or not run): not in the scores.
    missing: int = 0

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
        }

    def table(self, metrics: Sequence[str] = METRICS) -> str:
        """Return the scores as a text table: a row per set, per speaker, and overall."""
        head = f"{'':<16}{'utts':>6}"
        if "wer" in metrics:
            head += f"{'words':>8}{'sub':>6}{'del':>6}{'ins':>6}{'WER':>8}"
        if "cer" in metrics:
            head += f"{'chars':>8}{'sub':>6}{'del':>6}{'ins':>6}{'CER':>8}"
        rows = [head]
        named = [(f"set {k}", v) for k, v in self.by_set.items()]
        named += [(f"speaker {k}", v) for k, v in self.by_speaker.items()]
        for name, row in [*named, ("all", self.overall)]:
            line = f"{name[:15]:<16}{row['utterances']:>6}"
            if "wer" in metrics:
                line += f"{row['words']:>8}{row['substitutions']:>6}{row['deletions']:>6}"
                line += f"{row['insertions']:>6}{row['wer']:>8.2%}"
            if "cer" in metrics and "cer" in row:
                line += f"{row['chars']:>8}{row['char_substitutions']:>6}"
                line += f"{row['char_deletions']:>6}{row['char_insertions']:>6}{row['cer']:>8.2%}"
            rows.append(line)
        return "\n".join(rows)


def score_run(
    run: Path,
    normalize_with: str | None = None,
    gates: dict[str, float] | None = None,
) -> Scores:
    """Score the stored hypotheses of the run in ``run`` again; decide the gates.

    ``gates`` maps ``wer``/``cer`` to the most each may be (``{"wer": 0.1}``).
    """
    name = normalize_with if normalize_with is not None else stored_normalizer(run)
    result = read_result(run)
    records = []
    for position, record in enumerate(result.records):
        if record is None:
            continue
        if not isinstance(record, dict) or "ref" not in record or "hyp" not in record:
            raise ValueError(
                f"{run}, item {position}: the record has no 'ref' and 'hyp'; only a decoding "
                "run (kit.examples.asr's DecodeRunner) can be scored"
            )
        records.append({**record, **score(str(record["ref"]), str(record["hyp"]), name)})
    scores = Scores(
        run=run,
        normalizer=name,
        overall=totals(records),
        by_speaker=grouped(records, "speaker"),
        by_set=grouped(records, "set"),
        missing=len(result.records) - len(records),
    )
    for metric, limit in (gates or {}).items():
        value = scores.overall.get(metric)
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
        scores = score_run(run, normalize_with, gates)
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
