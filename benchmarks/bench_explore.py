"""Exploring faster: stop a trial when its comparison is decided, and score as sclite does, fast.

1. Stop when decided. Per-item differences of two trials, looked at after
   every chunk of 10 items of a 500-item set, 1,000 times each way: tied
   trials (the trial's per-item scores are the baseline's, shuffled: the
   same set, so any decision is false) and a trial worse by 0.05 (per-item
   sd 0.15). Kit's confidence sequence (``kit._trials.anytime``, as ``stop:
   decided`` uses it) beside Optuna's ``WilcoxonPruner`` (``p_threshold``
   0.1, as ``kit sweep --prune wilcoxon`` sets it) fed the same items:
   how often each decides (prunes) a tied trial, and after how many items
   it decides the worse one. Also the driver's CPU per look (one chunk).
2. Scoring. A test-clean-sized set (2,620 utterances, corpus sentences with
   a recognizer's kinds of errors) scored by Kit (words with alignments and
   characters, in process, no normaliser), Debian's sclite (words, and
   characters with ``-c``; whole processes), kaldialign and jiwer, each
   with its own counts; and Kit on 100,000 utterances.

3. Decode once, score many. A sweep of 4 beams x 3 normalisers over 1,000
   items whose ``forward`` waits 5 ms (a recognizer's time, inline, 3
   trials at once), with reuse and with ``runner.reuse=false``: forward
   calls, wall time, and whether the records are equal. Then what a reused
   item costs: a run of 200 items of 50 ms each, then runs beside it that
   reuse all of them (wall time per item, 5 runs), against the 50 ms.

Results are printed and written to benchmarks/results/explore.json.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kit._trials.anytime import ConfidenceSequence
from kit.asr.wer import score
from kit.examples.asr.corpus import SENTENCES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results
from bench_score import garbled, sclite_command, sclite_counts
from explore_workload import CALLS, Decodes, Waits

RESULTS = Path(__file__).resolve().parent / "results"
WORK = Path("runs/bench-explore")
RUNS, ITEMS, CHUNK = 1000, 500, 10
DIFFERENCE, SPREAD = 0.05, 0.15
UTTERANCES, MANY = 2620, 100_000
SWEPT, SWEEP_MS, HIT_ITEMS, HIT_MS, HIT_RUNS = 1000, 5, 200, 50, 5


# ----------------------------------------------------------------- stop when decided
def baseline_scores(rng: np.random.Generator) -> np.ndarray:
    """Per-item errors in [0, 1] of a baseline, one row a run."""
    return rng.beta(2, 8, size=(RUNS, ITEMS))


def kit_decisions(baseline: np.ndarray, trial: np.ndarray) -> np.ndarray:
    """Items Kit's sequence had seen when it decided each run (ITEMS + 1: never)."""
    cs = ConfidenceSequence(-1.0, 1.0, population=ITEMS, batch=len(baseline))
    decided = np.full(len(baseline), ITEMS + 1)
    for start in range(0, ITEMS, CHUNK):
        cs.update((trial - baseline)[:, start : start + CHUNK])
        low, high = cs.intervals.T
        now = ((low > 0) | (high < 0)) & (decided > ITEMS) & (start + CHUNK < ITEMS)
        decided[now] = start + CHUNK
    return decided


def wilcoxon_decisions(baseline: np.ndarray, trial: np.ndarray) -> np.ndarray:
    """Items Optuna's WilcoxonPruner had seen when it pruned the trial (ITEMS + 1: never)."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    pruned = np.full(len(baseline), ITEMS + 1)
    for run in range(len(baseline)):
        study = optuna.create_study(
            direction="minimize",
            pruner=optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2),
        )
        best = study.ask()
        for step, value in enumerate(baseline[run]):
            best.report(float(value), step)
        study.tell(best, float(baseline[run].mean()))
        other = study.ask()
        for start in range(0, ITEMS, CHUNK):
            for step in range(start, start + CHUNK):
                other.report(float(trial[run, step]), step)
            if start + CHUNK < ITEMS and other.should_prune():
                pruned[run] = start + CHUNK
                break
        study.tell(other, state=optuna.trial.TrialState.PRUNED)
    return pruned


def driver_cpu_per_look() -> tuple[float, float, float]:
    """CPU seconds a look takes (a chunk of 10 into a 500-item sequence): median, min, max."""
    rng = np.random.default_rng(3)
    values = np.clip(rng.normal(0.0, SPREAD, ITEMS), -1, 1)
    spent = []
    for _ in range(20):
        cs = ConfidenceSequence(-1.0, 1.0, population=ITEMS)
        began = time.process_time()
        for start in range(0, ITEMS, CHUNK):
            cs.update(values[start : start + CHUNK])
            cs.interval  # noqa: B018 (a look)
        spent.append((time.process_time() - began) / (ITEMS // CHUNK))
    return statistics.median(spent), min(spent), max(spent)


def stop_when_decided() -> dict[str, Any]:
    rng = np.random.default_rng(58)
    base = baseline_scores(rng)
    tied = rng.permuted(base, axis=1)  # the same scores, item by item unrelated
    worse = np.clip(base + rng.normal(DIFFERENCE, SPREAD, base.shape), 0, 1)
    found: dict[str, Any] = {}
    for name, decide in (("kit", kit_decisions), ("wilcoxon", wilcoxon_decisions)):
        began = time.perf_counter()
        null = decide(base, tied)
        alternative = decide(base, worse)
        found[name] = {
            "false_decisions": float((null <= ITEMS).mean()),
            "decided": float((alternative <= ITEMS).mean()),
            "median_items": float(np.median(alternative)),
            "p90_items": float(np.percentile(alternative, 90)),
            "seconds": time.perf_counter() - began,
        }
    median, least, most = driver_cpu_per_look()
    found["kit"]["cpu_per_look_ms"] = median * 1000
    found["kit"]["cpu_per_look_spread_ms"] = [least * 1000, most * 1000]
    return found


# ----------------------------------------------------------------- scoring
def pairs(n: int, seed: int = 11) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ref = " ".join(rng.choice(SENTENCES) for _ in range(2))  # about 20 words
        out.append((ref, garbled(ref, rng)))
    return out


def kit_counts(texts: list[tuple[str, str]]) -> tuple[float, dict[str, int]]:
    began = time.process_time()
    records = [score(ref, hyp, "none") for ref, hyp in texts]
    seconds = time.process_time() - began
    keys = ("substitutions", "deletions", "insertions")
    counts = {key: sum(r[key] for r in records) for key in keys}
    counts.update({f"char_{key}": sum(r[f"char_{key}"] for r in records) for key in keys})
    return seconds, counts


def sclite_runs(texts: list[tuple[str, str]]) -> dict[str, Any]:
    if shutil.which("sclite") is None and shutil.which("sctk") is None:
        return {}
    WORK.mkdir(parents=True, exist_ok=True)
    ref, hyp = WORK / "ref.trn", WORK / "hyp.trn"
    ref.write_text("".join(f"{r} (spk-u{i:06d})\n" for i, (r, _) in enumerate(texts)))
    hyp.write_text("".join(f"{h} (spk-u{i:06d})\n" for i, (_, h) in enumerate(texts)))
    command = [*sclite_command(), "-r", str(ref), "trn", "-h", str(hyp), "trn", "-i", "rm"]
    found: dict[str, Any] = {}
    for name, extra in (("words", []), ("chars", ["-c", "-e", "utf-8"])):
        began = time.perf_counter()
        report = subprocess.run(
            [*command, *extra, "-o", "rsum", "stdout"], capture_output=True, text=True, check=True
        ).stdout
        found[name] = {"seconds": time.perf_counter() - began, **sclite_counts(report)}
    return found


def kaldialign_counts(texts: list[tuple[str, str]]) -> dict[str, Any]:
    try:
        import kaldialign
    except ImportError:
        return {}
    began = time.process_time()
    words = [kaldialign.edit_distance(r.split(), h.split()) for r, h in texts]
    chars = [
        kaldialign.edit_distance(list(r.replace(" ", "")), list(h.replace(" ", "")))
        for r, h in texts
    ]
    seconds = time.process_time() - began
    return {
        "seconds": seconds,
        **{key: sum(w[key[:3]] for w in words) for key in ("substitutions", "deletions")},
        "insertions": sum(w["ins"] for w in words),
        "char_substitutions": sum(c["sub"] for c in chars),
        "char_deletions": sum(c["del"] for c in chars),
        "char_insertions": sum(c["ins"] for c in chars),
    }


def jiwer_counts(texts: list[tuple[str, str]]) -> dict[str, Any]:
    import jiwer

    refs, hyps = [r for r, _ in texts], [h for _, h in texts]
    began = time.process_time()
    words = jiwer.process_words(refs, hyps)
    chars = jiwer.process_characters(
        [r.replace(" ", "") for r in refs], [h.replace(" ", "") for h in hyps]
    )
    seconds = time.process_time() - began
    return {
        "seconds": seconds,
        "substitutions": words.substitutions,
        "deletions": words.deletions,
        "insertions": words.insertions,
        "char_substitutions": chars.substitutions,
        "char_deletions": chars.deletions,
        "char_insertions": chars.insertions,
    }


def scoring() -> dict[str, Any]:
    texts = pairs(UTTERANCES)
    seconds, counts = kit_counts(texts)
    many_seconds, _ = kit_counts(pairs(MANY, seed=12))
    return {
        "kit": {"seconds": seconds, **counts},
        "kit_many_seconds": many_seconds,
        "sclite": sclite_runs(texts),
        "kaldialign": kaldialign_counts(texts),
        "jiwer": jiwer_counts(texts),
        "words": sum(len(r.split()) for r, _ in texts),
        "chars": sum(len(r.replace(" ", "")) for r, _ in texts),
    }


ERRORS = ("substitutions", "deletions", "insertions")


# ----------------------------------------------------------------- decode once, score many
def reuse_config(work_ms: float, items: int, **runner: Any) -> dict[str, Any]:
    return {
        "provider": {"_target_": "explore_workload.Waits"},
        "runner": {"_target_": "explore_workload.Decodes", "chunk_size": 50, **runner},
        "items": {"start": 0, "stop": items},
        "decoder": {"beam_size": 1, "work_ms": work_ms},
        "scoring": {"normalizer": "basic"},
        "parallel": {"env": "inline"},
    }


def swept(folder: Path, **runner: Any) -> tuple[int, float, list[Any]]:
    """Forward calls, wall seconds and records of the 4 x 3 sweep into ``folder``."""
    import kit

    grid = ["decoder.beam_size=1,2,4,8", "scoring.normalizer=whisper,basic,none"]
    CALLS.clear()
    began = time.perf_counter()
    result = kit.sweep(
        reuse_config(SWEEP_MS, SWEPT, **runner), grid, output_dir=folder, concurrency=3
    )
    wall = time.perf_counter() - began
    return sum(CALLS.values()), wall, [r and r.records for r in result.results]


def reuse() -> dict[str, Any]:
    """The sweep with and without reuse; then a reused item's cost against a 50 ms one."""
    from omegaconf import OmegaConf

    shutil.rmtree(WORK / "reuse", ignore_errors=True)
    calls, wall, records = swept(WORK / "reuse" / "on", verify=0)
    fresh_calls, fresh_wall, fresh_records = swept(WORK / "reuse" / "off", reuse=False)
    cfg = OmegaConf.create(reuse_config(HIT_MS, HIT_ITEMS))
    root = WORK / "reuse" / "hits"
    began = time.perf_counter()
    Decodes(Waits(cfg), output_dir=root / "computed").run(range(HIT_ITEMS))
    computed = time.perf_counter() - began
    per_hit = []
    for n in range(HIT_RUNS):
        began = time.perf_counter()
        result = Decodes(Waits(cfg), output_dir=root / f"reused-{n}", verify=0).run(HIT_ITEMS)
        per_hit.append((time.perf_counter() - began) / HIT_ITEMS)
        assert result.stats.reused == HIT_ITEMS
    return {
        "sweep": {"forward_calls": calls, "wall_seconds": wall},
        "sweep_without_reuse": {"forward_calls": fresh_calls, "wall_seconds": fresh_wall},
        "same_records": records == fresh_records,
        "computed_item_ms": 1000 * computed / HIT_ITEMS,
        "reused_item_ms": 1000 * statistics.median(per_hit),
        "reused_item_spread_ms": [1000 * min(per_hit), 1000 * max(per_hit)],
    }


def count_row(label: str, found: dict[str, Any]) -> str:
    """A row of the scoring table: seconds, then word and character S, D, I."""
    counts = [found[key] for key in ERRORS] + [found[f"char_{key}"] for key in ERRORS]
    return f"| {label} | {found['seconds']:.3f} | " + " | ".join(map(str, counts)) + " |"


def main() -> int:
    machine = describe(("numpy", "optuna", "jiwer", "kaldialign"))
    stopping = stop_when_decided()
    scored = scoring()
    reused = reuse()
    kit, wilcoxon = stopping["kit"], stopping["wilcoxon"]
    sclite = scored["sclite"]
    same_words = bool(sclite) and all(
        scored["kit"][key] == sclite["words"][key]
        for key in ("substitutions", "deletions", "insertions")
    )
    same_chars = bool(sclite) and all(
        scored["kit"][f"char_{key}"] == sclite["chars"][key]
        for key in ("substitutions", "deletions", "insertions")
    )
    results: dict[str, Any] = {
        "machine": machine,
        "stopping": stopping,
        "scoring": scored,
        "reuse": reused,
    }
    on, off = reused["sweep"], reused["sweep_without_reuse"]
    lines = [
        "Command: `make bench` (or `python benchmarks/bench_explore.py`).",
        "",
        f"Stop when decided: {RUNS:,} runs each way of a {ITEMS}-item set, a look after every "
        f"chunk of {CHUNK} items.",
        "",
        "| | tied trial decided (false) | worse trial decided | items to decide: median | p90 |",
        "|---|---|---|---|---|",
        *[
            f"| {label} | {found['false_decisions']:.1%} | {found['decided']:.1%} | "
            f"{found['median_items']:.0f} | {found['p90_items']:.0f} |"
            for label, found in (
                ("Kit's confidence sequence (95%)", kit),
                ("Optuna's WilcoxonPruner (p 0.1)", wilcoxon),
            )
        ],
        "",
        f"A look (a chunk of {CHUNK} into the sequence) takes "
        f"{kit['cpu_per_look_ms']:.3f} ms of the driver's CPU (median of 20 runs of 50 looks; "
        f"{kit['cpu_per_look_spread_ms'][0]:.3f} to {kit['cpu_per_look_spread_ms'][1]:.3f}).",
        "",
        f"Scoring {UTTERANCES:,} utterances ({scored['words']:,} words, {scored['chars']:,} "
        "characters), words and characters:",
        "",
        "| | seconds | S | D | I | char S | char D | char I |",
        "|---|---|---|---|---|---|---|---|",
        count_row("Kit (in process, CPU, words aligned)", scored["kit"]),
    ]
    if sclite:
        both = {
            "seconds": sclite["words"]["seconds"] + sclite["chars"]["seconds"],
            **{key: sclite["words"][key] for key in ERRORS},
            **{f"char_{key}": sclite["chars"][key] for key in ERRORS},
        }
        lines.append(count_row("sclite (two processes, wall)", both))
    for name in ("kaldialign", "jiwer"):
        if scored[name]:
            lines.append(count_row(f"{name} (in process, CPU)", scored[name]))
    lines += [
        "",
        f"Kit on {MANY:,} utterances: {scored['kit_many_seconds']:.2f} s of CPU.",
        "",
        f"Decode once, score many: a sweep of 4 beams x 3 normalisers over {SWEPT:,} items "
        f"whose forward waits {SWEEP_MS} ms (inline, 3 trials at once):",
        "",
        "| | forward calls | wall seconds |",
        "|---|---|---|",
        f"| reuse (Kit's default) | {on['forward_calls']:,} | {on['wall_seconds']:.1f} |",
        f"| runner.reuse=false | {off['forward_calls']:,} | {off['wall_seconds']:.1f} |",
        "",
        f"The records of the two sweeps are {'equal' if reused['same_records'] else 'NOT equal'}. "
        f"A reused item costs {reused['reused_item_ms']:.3f} ms of wall time (median of "
        f"{HIT_RUNS} runs of {HIT_ITEMS} items, {reused['reused_item_spread_ms'][0]:.3f} to "
        f"{reused['reused_item_spread_ms'][1]:.3f}, the whole run's time shared out), against "
        f"{reused['computed_item_ms']:.1f} ms for a computed one "
        f"({reused['reused_item_ms'] / reused['computed_item_ms']:.2%}).",
        "",
    ]
    checks = {
        "a tied trial is decided in at most 5% of runs": kit["false_decisions"] <= 0.05,
        "a 0.05 difference is decided at a median of at most 150 items": kit["median_items"] <= 150,
        "a 0.05 difference is decided at a 90th percentile of at most 200 items": kit["p90_items"]
        <= 200,
        "a look costs at most 0.1 ms of the driver's CPU": kit["cpu_per_look_ms"] <= 0.1,
        "Kit's word counts equal sclite's": same_words,
        "Kit's character counts equal sclite -c -e utf-8's": same_chars,
        "2,620 utterances, words and characters, in at most 0.2 s of CPU": scored["kit"]["seconds"]
        <= 0.2,
        "100,000 utterances in at most 10 s of CPU": scored["kit_many_seconds"] <= 10,
        "the 4 x 3 sweep calls forward 4,000 times": on["forward_calls"] == 4 * SWEPT,
        "its records equal those of the sweep without reuse": reused["same_records"],
        "a reused item costs at most 5% of a 50 ms item": reused["reused_item_ms"]
        <= 0.05 * reused["computed_item_ms"],
    }
    write_results(
        RESULTS,
        "explore",
        results,
        lines,
        checks,
        title="Exploring faster benchmark",
        packages=("numpy", "optuna", "jiwer", "kaldialign"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
