"""Decoding 100 utterances: Kit on 2 local workers vs inline (``make bench``).

The corpus (30 sentences, 70 digit strings, spoken by espeak-ng) is decoded
with the general language model; each worker must build its decoder exactly
once (counted by the worker plugin), however many runs.

Results are printed and written to benchmarks/results/asr.{json,md}.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import kit
from kit._plugin import env_report
from kit.examples.asr import DecodeProvider, DecodeRunner, build_corpus
from kit.examples.asr.decode import CONFIG_PATH

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, machine_line, write_results

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("runs/asr-data")
PARALLEL = {"env": "local", "n_workers": 2}


_POOL_ENV: dict[str, Any] = {}


def _pool_init(plain: dict[str, Any]) -> None:
    from kit.examples.asr.decode import build_env

    _POOL_ENV.update(build_env(plain))


def _pool_decode(idx: int) -> str:
    record = DecodeRunner.forward(idx, _POOL_ENV["decoder"], _POOL_ENV["dataset"])
    return str(record["hyp"])


def pool_seconds(cfg: Any, n: int) -> float:
    """Two processes, one decoder each, items handed out one at a time: this machine's ceiling."""
    import multiprocessing

    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(cfg, resolve=True)
    with multiprocessing.get_context("spawn").Pool(2, _pool_init, (plain,)) as pool:
        pool.map(_pool_decode, range(2), chunksize=1)
        began = time.perf_counter()
        pool.map(_pool_decode, range(n), chunksize=1)
        return time.perf_counter() - began


def main() -> int:
    machine = describe(("dask", "distributed", "pocketsphinx"))
    manifests = build_corpus(DATA)
    combined = DATA / "all.jsonl"
    combined.write_text(manifests["sentences"].read_text() + manifests["digits"].read_text())
    cfg = kit.load_config(CONFIG_PATH, [f"data.manifest={combined}", "decoder.mode=lm"])
    n = len(combined.read_text().splitlines())

    inline = DecodeRunner(DecodeProvider(cfg))
    inline.run(range(2))  # build the decoder (once) outside the timing, as the workers do
    began = time.perf_counter()
    inline_result = inline.run(range(n))
    inline_s = time.perf_counter() - began

    provider = DecodeProvider(cfg)
    local = DecodeRunner(provider, parallel=PARALLEL)
    local.run(range(2))
    walls = []
    for _ in range(3):
        began = time.perf_counter()
        local_result = local.run(range(n))
        walls.append(time.perf_counter() - began)
    local_s = min(walls)
    client = kit.get_session(PARALLEL).client
    pool_s = pool_seconds(cfg, n)
    builds = sorted(r["builds"] for r in client.run(env_report, provider.env_name()).values())
    kit.shutdown()
    # PocketSphinx keeps state across the utterances one decoder has decoded, so a
    # hypothesis can depend on which utterances came before it on that decoder.
    agree = sum(
        a["hyp"] == b["hyp"]
        for a, b in zip(inline_result.records, local_result.records, strict=True)
    )
    busy = {name: round(w.busy_seconds, 2) for name, w in local_result.stats.workers.items()}
    results: dict[str, Any] = {
        "machine": machine,
        "utterances": n,
        "audio_seconds": round(sum(r["duration"] for r in inline_result.records), 1),
        "inline_seconds": inline_s,
        "kit_local_seconds": local_s,
        "speedup": inline_s / local_s,
        "pool_seconds": pool_s,
        "pool_speedup": inline_s / pool_s,
        "decoder_builds_per_worker": builds,
        "hypotheses_agreeing_with_inline": agree,
        "busy_seconds_per_worker": busy,
        "wer_inline": inline_result.summary["wer"],
        "wer": local_result.summary["wer"],
    }
    checks = {
        "speedup >= 1.8": results["speedup"] >= 1.8,
        "each worker built its decoder exactly once (4 runs)": builds == [1, 1],
    }
    lines = [
        "# Decoding benchmark",
        "",
        machine_line(machine, ("pocketsphinx", "dask")),
        f"Command: `make bench`. {n} utterances ({results['audio_seconds']} s of speech made "
        "with espeak-ng), PocketSphinx with its general language model.",
        "",
        "| method | seconds | speedup |",
        "|---|---|---|",
        f"| inline (decoder built beforehand) | {inline_s:.2f} | 1.00 |",
        f"| Kit, LocalCluster 2 workers (best of 3) | {local_s:.2f} | {results['speedup']:.2f} |",
        f"| `multiprocessing.Pool(2)`, a decoder per process, chunksize 1 | {pool_s:.2f} | "
        f"{results['pool_speedup']:.2f} |",
        "",
        "The Pool row is this machine's ceiling for two decoders at once: when Kit's "
        "speedup falls short of 2, compare with it (and with the time in forward per "
        "worker below), not with the ideal.",
        "",
        f"Decoder builds per worker over 4 runs: {builds}. Time in forward per worker in "
        f"the last run: {busy}. Corpus WER (LM): {results['wer']:.1%} on workers, "
        f"{results['wer_inline']:.1%} inline; {agree}/{n} hypotheses equal to inline "
        "(PocketSphinx keeps state across the utterances one decoder has decoded, so a "
        "hypothesis can depend on what that decoder decoded before).",
        "",
    ]
    write_results(RESULTS, "asr", results, lines, checks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
