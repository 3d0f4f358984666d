"""``python -m kit.examples.asr [OVERRIDES...]``: the decoding check, headless.

Builds the spoken corpus if needed, then decodes it on the local cluster with
Whisper and with PocketSphinx (its language model), printing a few decoded
utterances and the summary of each run, writing each run's ``report.html``,
and ending with a table of WER by voice and by engine.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import kit
from kit._from_config import build_runner
from kit.asr.wer import corpus_wer, wer_by
from kit.examples.asr import CONFIG_PATH
from kit.examples.asr.corpus import FLITE_VOICES, build_corpus
from kit.result import RunResult

ENGINES = ("whisper", "pocketsphinx")


def table(result: RunResult, rows: int = 8) -> str:
    """Return the first ``rows`` decoded utterances as text."""
    lines = [f"{'id':<22} {'errors':>6}  {'reference':<44} hypothesis"]
    for record in result.records[:rows]:
        if record is None:
            continue
        lines.append(
            f"{record['id']:<22} {record['errors']:>6}  {record['ref']:<44} {record['hyp']}"
        )
    if len(result.records) > rows:
        lines.append(f"... {len(result.records) - rows} more")
    return "\n".join(lines)


def wer_table(records: Mapping[str, Sequence[Any]]) -> str:
    """WER by voice (rows) and engine (columns), with the flite voices and all together.

    Examples
    --------
    >>> from kit.asr.wer import score
    >>> rec = [{"speaker": "slt", **score("one two", "one two")}]
    >>> print(wer_table({"whisper": rec}))
    voice             whisper
    slt                  0.0%
    flite voices         0.0%
    all                  0.0%
    """
    columns = {name: [r for r in recs if r is not None] for name, recs in records.items()}
    by_voice = {name: wer_by(recs, "speaker") for name, recs in columns.items()}
    voices = sorted({voice for table in by_voice.values() for voice in table})
    header = f"{'voice':<14}" + "".join(f"{name:>14}" for name in columns)
    lines = [header]
    for voice in voices:
        cells = "".join(
            f"{by_voice[name][voice]:>14.1%}" if voice in by_voice[name] else f"{'-':>14}"
            for name in columns
        )
        lines.append(f"{voice:<14}{cells}")
    flite = {
        name: corpus_wer([r for r in recs if r.get("speaker") in FLITE_VOICES])
        for name, recs in columns.items()
    }
    if any(total["words"] for total in flite.values()):
        lines.append(
            f"{'flite voices':<14}" + "".join(f"{flite[n]['wer']:>14.1%}" for n in columns)
        )
    lines.append(
        f"{'all':<14}" + "".join(f"{corpus_wer(recs)['wer']:>14.1%}" for recs in columns.values())
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the decoding check with each engine; return the exit code."""
    overrides = list(sys.argv[1:] if argv is None else argv)
    records: dict[str, list[Any]] = {}
    try:
        base = kit.load_config(CONFIG_PATH, overrides)
        build_corpus(base.data.root)
        for engine in ENGINES:
            cfg = kit.load_config(base, [f"decoder.engine={engine}"])
            runner, indices = build_runner(cfg)
            result = runner.run(indices)
            print(f"\n== decoder.engine={engine}: {len(result.records)} utterances ==")
            print(table(result))
            # Rounded to print: the run's summary.json keeps every digit.
            shown = {
                k: round(v, 4) if isinstance(v, float) else v for k, v in result.summary.items()
            }
            print(f"summary: {shown}   report: {result.output_dir}/report.html")
            records[engine] = result.records
    except (kit.ConfigError, RuntimeError, FileNotFoundError, ImportError) as exc:
        print(f"asr: error: {exc}", file=sys.stderr)
        return 2
    finally:
        kit.shutdown()
    print("\nWER by voice and engine (Whisper's English normalisation):")
    print(wer_table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
