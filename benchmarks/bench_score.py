"""Scoring: ``kit score`` against NIST's sclite, and scoring again against decoding again.

1. 10,000 synthetic reference/hypothesis pairs (corpus sentences with a
   recognizer's kinds of errors: words swapped, dropped, added) are stored
   as a run; ``kit score`` (a whole process, as a pipeline calls it) and
   Debian's ``sclite`` on the trn files ``kit export`` writes score them,
   best of 3 rounds each, alternating. Their S, D, I and N must be equal.
2. A finished 250-utterance Whisper run (the generated corpus, Kit's 2 local
   workers) is scored with another normaliser: ``kit score --normalizer
   basic`` against decoding the 250 utterances again with
   ``scoring.normalizer=basic``.

Results are printed and written to benchmarks/results/score.json.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kit
from kit.asr import DecodeProvider, DecodeRunner
from kit.examples.asr import CONFIG_PATH, build_corpus
from kit.examples.asr.corpus import SENTENCES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("runs/asr-data")
WORK = Path("runs/bench-score")
PAIRS = 10_000
ROUNDS = 3
PARALLEL = {"env": "local", "n_workers": 2}
KIT = [sys.executable, "-m", "kit"]
VOCABULARY = sorted({word for sentence in SENTENCES for word in sentence.split()})


def garbled(sentence: str, rng: random.Random) -> str:
    """The sentence as a recognizer might get it wrong: about one word in six."""
    words = []
    for word in sentence.split():
        roll = rng.random()
        if roll < 0.08:
            words.append(rng.choice(VOCABULARY))  # substituted
        elif roll < 0.12:
            continue  # deleted
        else:
            words.append(word)
        if rng.random() < 0.04:
            words.append(rng.choice(VOCABULARY))  # inserted
    return " ".join(words)


def stored_pair(idx: int, seed: int = 11) -> dict[str, Any]:
    """Item ``idx``'s pair, as a decoding run stores it (module level: picklable)."""
    rng = random.Random(seed * 1_000_003 + idx)
    ref = rng.choice(SENTENCES)
    return {"id": f"u{idx:05d}", "speaker": f"spk{idx % 10}", "ref": ref, "hyp": garbled(ref, rng)}


class Pairs(kit.Runner):
    """Stores the synthetic pairs as a run: what ``kit score`` reads."""

    @staticmethod
    def forward(idx: Any, **env: Any) -> Any:
        return stored_pair(int(idx))


class NoEnv(kit.EnvironmentProvider):
    def build_env_local(self) -> dict[str, Any]:
        return {}

    def make_worker_setup_fn(self) -> Any:
        return dict


def sclite_command() -> list[str]:
    return ["sclite"] if shutil.which("sclite") else ["sctk", "sclite"]


def timed(command: list[str]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - began, done.stdout


def sclite_counts(report: str) -> dict[str, int]:
    """S, D, I and N from sclite's raw summary (``-o rsum``): its Sum row."""
    row = next(line for line in report.splitlines() if "| Sum " in line)
    numbers = [int(n) for n in re.findall(r"\d+", row)]
    _snt, words, _corr, sub, dele, ins = numbers[:6]
    return {"substitutions": sub, "deletions": dele, "insertions": ins, "words": words}


def main() -> int:
    if shutil.which("sclite") is None and shutil.which("sctk") is None:
        print("bench_score: sclite missing (apt-get install sctk)", file=sys.stderr)
        return 1
    machine = describe(("dask", "distributed", "faster-whisper", "ctranslate2"))
    shutil.rmtree(WORK, ignore_errors=True)
    pairs_dir, trn = WORK / "pairs", WORK / "trn"
    Pairs(NoEnv({}), output_dir=pairs_dir).run(range(PAIRS))
    # The texts as stored: no normaliser on either side, so both score the same words.
    subprocess.run(
        [*KIT, "export", str(pairs_dir), "-o", str(trn), "--normalizer", "none"], check=True
    )
    sclite = [*sclite_command(), "-r", str(trn / "ref.trn"), "trn", "-h", str(trn / "hyp.trn")]
    sclite += ["trn", "-i", "rm", "-o", "rsum", "stdout"]
    pairs: dict[str, tuple[list[str], list[str]]] = {
        # kit score prints and gates one metric; sclite aligns words, or characters with -c.
        "wer": ([*KIT, "score", str(pairs_dir), "--normalizer", "none", "--metric", "wer"], sclite),
        "cer": (
            [*KIT, "score", str(pairs_dir), "--normalizer", "none", "--metric", "cer"],
            [*sclite[:-3], "-c", *sclite[-3:]],
        ),
    }
    walls: dict[str, dict[str, list[float]]] = {m: {"kit": [], "sclite": []} for m in pairs}
    reports: dict[str, str] = {}
    for _ in range(ROUNDS):  # alternating: a busy spell of the machine hits both
        for metric, (ours_cmd, theirs_cmd) in pairs.items():
            walls[metric]["kit"].append(timed([*ours_cmd, "--no-write"])[0])
            seconds, reports[metric] = timed(theirs_cmd)
            walls[metric]["sclite"].append(seconds)
    subprocess.run(  # writes metrics.json, both metrics
        [*KIT, "score", str(pairs_dir), "--normalizer", "none"], check=True, capture_output=True
    )
    overall = json.loads((pairs_dir / "metrics.json").read_text())["overall"]
    ours = {
        "wer": {key: overall[key] for key in ("substitutions", "deletions", "insertions", "words")},
        "cer": {
            "substitutions": overall["char_substitutions"],
            "deletions": overall["char_deletions"],
            "insertions": overall["char_insertions"],
            "words": overall["chars"],
        },
    }
    theirs = {metric: sclite_counts(report) for metric, report in reports.items()}
    same = {metric: ours[metric] == theirs[metric] for metric in pairs}
    best = {m: {side: min(w) for side, w in sides.items()} for m, sides in walls.items()}

    # Scoring a finished decoding again with another normaliser, against decoding again.
    manifests = build_corpus(DATA)
    base = [f"data.manifest={manifests['corpus']}", "decoder.engine=whisper"]
    decoded = WORK / "decoded"
    cfg = kit.load_config(CONFIG_PATH, base)
    DecodeRunner(DecodeProvider(cfg), parallel=PARALLEL, output_dir=decoded).run(range(250))
    rescore_s, _ = timed([*KIT, "score", str(decoded), "--normalizer", "basic"])
    again = kit.load_config(CONFIG_PATH, [*base, "scoring.normalizer=basic"])
    began = time.perf_counter()  # the workers' model is loaded already: decoding alone
    redone = DecodeRunner(DecodeProvider(again), parallel=PARALLEL, output_dir=WORK / "again")
    result = redone.run(range(250))
    redecode_s = time.perf_counter() - began
    kit.shutdown()
    rescored = json.loads((decoded / "metrics.json").read_text())["overall"]
    agree = rescored["wer"] == result.summary["wer"]

    results: dict[str, Any] = {
        "machine": machine,
        "pairs": PAIRS,
        "seconds": best,
        "rounds": walls,
        "kit_counts": ours,
        "sclite_counts": theirs,
        "rescore_seconds": rescore_s,
        "redecode_seconds": redecode_s,
        "rescore_speedup": redecode_s / rescore_s,
        "rescored_wer": rescored["wer"],
        "redecoded_wer": result.summary["wer"],
    }
    quick = best["wer"]["kit"] <= 3 * best["wer"]["sclite"]
    checks = {
        "kit score's word S, D, I and N equal sclite's on 10,000 pairs": same["wer"],
        "kit score's character S, D, I and N equal sclite -c's": same["cer"],
        "`kit score --metric wer` within 3x sclite's time (a whole Python process)": quick,
        "scoring again is 10x faster than decoding again": redecode_s >= 10 * rescore_s,
        "scoring again gives the WER decoding again gives": agree,
    }
    title, packages = "Scoring benchmark", ("faster-whisper", "ctranslate2", "dask")
    agreement = (
        f"WER {rescored['wer']:.2%} both ways"
        if agree
        else f"WER {rescored['wer']:.2%} scored again, {result.summary['wer']:.2%} decoded again"
    )
    lines = [
        "Command: `make bench` (or `python benchmarks/bench_score.py`). Each figure is a whole "
        f"process, best of {ROUNDS} alternating rounds.",
        "",
        f"| {PAIRS:,} reference/hypothesis pairs | seconds | S | D | I | N |",
        "|---|---|---|---|---|---|",
        *[
            f"| {label} | {best[metric][side]:.2f} | {counts[metric]['substitutions']} | "
            f"{counts[metric]['deletions']} | {counts[metric]['insertions']} | "
            f"{counts[metric]['words']} |"
            for metric, side, label, counts in (
                ("wer", "kit", "`kit score --metric wer` (words)", ours),
                ("wer", "sclite", "`sclite -i rm` on `kit export`'s trn files", theirs),
                ("cer", "kit", "`kit score --metric cer` (characters)", ours),
                ("cer", "sclite", "`sclite -i rm -c` on the same files", theirs),
            )
        ],
        "",
        "A finished 250-utterance Whisper run (Kit's 2 local workers) with another "
        f"normaliser (`basic`): `kit score` took {rescore_s:.2f} s, decoding again "
        f"{redecode_s:.2f} s (the workers' model already loaded), "
        f"{results['rescore_speedup']:.0f}x as long; {agreement}.",
        "",
    ]
    write_results(RESULTS, "score", results, lines, checks, title=title, packages=packages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
