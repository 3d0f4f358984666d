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
    subprocess.run([*KIT, "export", str(pairs_dir), "-o", str(trn)], check=True)
    score_cmd = [*KIT, "score", str(pairs_dir), "--normalizer", "none"]
    sclite_cmd = [*sclite_command(), "-r", str(trn / "ref.trn"), "trn"]
    sclite_cmd += ["-h", str(trn / "hyp.trn"), "trn", "-i", "rm", "-o", "rsum", "stdout"]
    kit_walls, sclite_walls = [], []
    for _ in range(ROUNDS):  # alternating: a busy spell of the machine hits both
        seconds, _ = timed([*score_cmd, "--no-write"])
        kit_walls.append(seconds)
        seconds, report = timed(sclite_cmd)
        sclite_walls.append(seconds)
    subprocess.run(score_cmd, check=True, capture_output=True)  # writes metrics.json
    ours = json.loads((pairs_dir / "metrics.json").read_text())["overall"]
    theirs = sclite_counts(report)
    same = all(ours[key] == value for key, value in theirs.items())

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

    kit_s, sclite_s = min(kit_walls), min(sclite_walls)
    results: dict[str, Any] = {
        "machine": machine,
        "pairs": PAIRS,
        "kit_score_seconds": kit_s,
        "kit_rounds": kit_walls,
        "sclite_seconds": sclite_s,
        "sclite_rounds": sclite_walls,
        "kit_counts": {key: ours[key] for key in theirs},
        "sclite_counts": theirs,
        "rescore_seconds": rescore_s,
        "redecode_seconds": redecode_s,
        "rescore_speedup": redecode_s / rescore_s,
        "rescored_wer": rescored["wer"],
        "redecoded_wer": result.summary["wer"],
    }
    checks = {
        "kit score's S, D, I and N equal sclite's on 10,000 pairs": same,
        "kit score within 3x sclite's time": kit_s <= 3 * sclite_s,
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
        f"| `kit score --normalizer none` | {kit_s:.2f} | {ours['substitutions']} | "
        f"{ours['deletions']} | {ours['insertions']} | {ours['words']} |",
        f"| `sclite -i rm -o rsum` on `kit export`'s trn files | {sclite_s:.2f} | "
        f"{theirs['substitutions']} | {theirs['deletions']} | {theirs['insertions']} | "
        f"{theirs['words']} |",
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
