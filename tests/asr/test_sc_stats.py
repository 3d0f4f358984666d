"""Kit's paired interval and SCTK's ``sc_stats`` agree on which of two runs is better.

Two recognizers' hypotheses of the same references: Kit compares the runs
with its paired bootstrap (:func:`kit.compare` on corpus WER), sc_stats reads
sclite's alignments of Kit's exported files and runs NIST's matched-pairs
test (MAPSSWE) and the sign test. Where the difference is clear both name the
same run; where one utterance differs both find no difference.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.asr import corpus_wer, score
from kit.asr.export import lines
from tests.asr.test_sclite import sclite

WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "she",
    "sells",
    "sea",
    "shells",
    "by",
    "shore",
    "in",
    "time",
]


class Pairs(kit.EnvironmentProvider):
    """The env is the run's (reference, hypothesis) pairs."""

    def build_env_local(self) -> dict[str, Any]:
        return {"pairs": list(self.config.pairs)}

    def make_worker_setup_fn(self) -> Any:
        return dict


class Scored(kit.Runner):
    """One utterance scored per item, as a decoding run records it."""

    @staticmethod
    def forward(idx: int, pairs: Any) -> dict[str, Any]:
        ref, hyp = pairs[idx]
        # Each utterance is its own speaker, so sc_stats's sign test runs over utterances.
        uid = f"u{idx:03d}"
        return {"id": uid, "speaker": uid, "ref": ref, "hyp": hyp, **score(ref, hyp)}


def garble(text: str, rate: float, rng: random.Random) -> str:
    """Return ``text`` with about ``rate`` of its words substituted, deleted or doubled."""
    out: list[str] = []
    for word in text.split():
        draw = rng.random()
        if draw < rate / 2:
            out.append(rng.choice(WORDS))
        elif draw < rate * 3 / 4:
            continue
        elif draw < rate:
            out += [word, rng.choice(WORDS)]
        else:
            out.append(word)
    return " ".join(out)


def run(refs: list[str], hyps: list[str]) -> kit.RunResult:
    return Scored(Pairs({"pairs": list(zip(refs, hyps, strict=True))})).run(len(refs))


def sc_stats(folder: Path, a: kit.RunResult, b: kit.RunResult) -> dict[str, str]:
    """sc_stats's verdict per test on Kit's exported files: the better run's name, or 'same'."""
    ref, hyp_a = lines(a.records, "trn")
    _, hyp_b = lines(b.records, "trn")
    (folder / "ref.trn").write_text(ref)
    sgml = []
    for name, hyp in (("a", hyp_a), ("b", hyp_b)):
        (folder / name).write_text(hyp)
        command = [*sclite(), "-r", "ref.trn", "trn", "-h", name, "trn", "-i", "rm"]
        subprocess.run([*command, "-o", "sgml"], cwd=folder, check=True, capture_output=True)
        sgml.append((folder / f"{name}.sgml").read_text())
    stats = [*sclite()[:-1], "sc_stats"]
    subprocess.run(
        [*stats, "-p", "-t", "mapsswe", "-t", "sign", "-u", "-O", str(folder), "-n", "cmp"],
        input="".join(sgml),
        text=True,
        check=True,
        capture_output=True,
    )
    # a.sts: the tests' abbreviations, then "b  <verdict per test>": the run with the
    # lower error rate where the null hypothesis is rejected at 95%, else "same".
    report = (folder / "a.sts").read_text()
    tests = re.search(r"^\s+(MP\s+SI)\s*$", report, re.M)
    verdicts = re.search(r"^\s*b\s+(\S+)\s+(\S+)\s*$", report, re.M)
    assert tests and verdicts, report
    return {"mapsswe": verdicts.group(1), "sign": verdicts.group(2)}


def kit_verdict(a: kit.RunResult, b: kit.RunResult) -> str:
    """Kit's: the better run if the interval of the WER difference leaves out 0, else 'same'."""
    found = kit.compare(a, b, "wer", summarize=corpus_wer)
    if found.low > 0:
        return "a"
    if found.high < 0:
        return "b"
    return "same"


@pytest.fixture
def references() -> list[str]:
    rng = random.Random(1)
    return [" ".join(rng.choices(WORDS, k=rng.randint(5, 12))) for _ in range(80)]


def test_a_clear_difference_is_named_alike_by_kit_and_sc_stats(
    tmp_path: Path, references: list[str]
) -> None:
    better = run(references, [garble(t, 0.06, random.Random(i)) for i, t in enumerate(references)])
    worse = run(references, [garble(t, 0.3, random.Random(-i)) for i, t in enumerate(references)])
    assert sc_stats(tmp_path, better, worse) == {"mapsswe": "a", "sign": "a"}
    assert kit_verdict(better, worse) == "a"
    assert kit_verdict(worse, better) == "b"


def test_one_utterance_apart_is_no_difference_to_either(
    tmp_path: Path, references: list[str]
) -> None:
    hyps = [garble(t, 0.15, random.Random(i)) for i, t in enumerate(references)]
    nudged = [*hyps[:-1], garble(references[-1], 0.5, random.Random(7))]
    a, b = run(references, hyps), run(references, nudged)
    assert corpus_wer(a.records)["wer"] != corpus_wer(b.records)["wer"]
    assert sc_stats(tmp_path, a, b) == {"mapsswe": "same", "sign": "same"}
    assert kit_verdict(a, b) == "same"
