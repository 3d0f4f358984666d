"""``python -m kit.examples.asr [OVERRIDES...]``: the decoding check, headless.

Builds the spoken corpus if needed, then decodes the digits set on the local
cluster with ``decoder.mode=lm`` and with ``decoder.mode=grammar``, printing
the per-utterance table and the WER/RTF summary of each, and writing each
run's ``report.html``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import kit
from kit._from_config import build_runner
from kit.examples.asr.corpus import build_corpus
from kit.examples.asr.decode import CONFIG_PATH
from kit.result import RunResult


def table(result: RunResult, rows: int = 12) -> str:
    """Return the first ``rows`` decoded utterances as text."""
    lines = [f"{'id':<12} {'errors':>6}  {'reference':<34} hypothesis"]
    for record in result.records[:rows]:
        if record is None:
            continue
        lines.append(
            f"{record['id']:<12} {record['errors']:>6}  {record['ref']:<34} {record['hyp']}"
        )
    if len(result.records) > rows:
        lines.append(f"... {len(result.records) - rows} more")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the decoding check in both modes; return the exit code."""
    overrides = list(sys.argv[1:] if argv is None else argv)
    try:
        base = kit.load_config(CONFIG_PATH, overrides)
        build_corpus(base.data.root)
        summaries = {}
        for mode in ("lm", "grammar"):
            cfg = kit.load_config(base, [f"decoder.mode={mode}"])
            runner, indices = build_runner(cfg)
            result = runner.run(indices)
            print(f"\n== decoder.mode={mode}: {len(result.records)} utterances ==")
            print(table(result))
            print(f"summary: {result.summary}   report: {result.output_dir}/report.html")
            summaries[mode] = result.summary
    except (kit.ConfigError, RuntimeError, FileNotFoundError) as exc:
        print(f"asr: error: {exc}", file=sys.stderr)
        return 2
    finally:
        kit.shutdown()
    print(
        "\nWER by decoder mode: " + ", ".join(f"{m} {s['wer']:.1%}" for m, s in summaries.items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
