"""``kit score`` and ``kit export``: a decoding run's stored hypotheses scored or written.

Scored again with another normaliser or gate; written for sclite (trn) or ESPnet (scp).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kit._base.errors import KitError
from kit._base.exits import EXIT_GATE, EXIT_NOTHING, EXIT_OK, say
from kit.cli._common import Commands, gates, positive, with_gates


def _score(args: argparse.Namespace) -> int:
    from kit.asr.rescore import score_folder

    if args.convention == "open-asr":
        return _score_open_asr(args)
    metrics = [m.strip() for m in args.metric.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in ("wer", "cer")]
    if unknown or not metrics:
        raise KitError(f"--metric {args.metric!r}: give wer, cer or wer,cer")
    try:
        every = score_folder(
            args.output_dir, args.normalizer, gates(args), not args.no_write, metrics
        )
    except ValueError as exc:
        raise KitError(str(exc)) from None
    for scores in every:
        say(f"{scores.run} (normalizer: {scores.normalizer})")
        if scores.missing:
            say(f"{scores.missing} item(s) have no hypothesis (failed or not run): not scored")
        say(scores.table(metrics))
        if args.align:
            say(scores.alignments(args.align))
        for name, check in scores.gate.items():
            verdict = "passed" if check["passed"] else "FAILED"
            value = "nothing scored" if check["value"] is None else f"{check['value']:.2%}"
            say(f"gate {name.replace('_', '-')} {check['limit']:.2%}: {value}, {verdict}")
    if any(check["value"] is None for scores in every for check in scores.gate.values()):
        return EXIT_NOTHING
    return EXIT_OK if all(scores.passed for scores in every) else EXIT_GATE


def _score_open_asr(args: argparse.Namespace) -> int:
    """Score each run as the Open ASR Leaderboard does; gate on its WER."""
    from kit.asr._stored import decoded, runs_in
    from kit.asr.open_asr import open_asr_score
    from kit.store._results import read_result

    if args.normalizer is not None or args.max_cer is not None or args.align:
        raise KitError(
            "--convention open-asr scores with the leaderboard's own normaliser and WER: "
            "leave out --normalizer, --max-cer and --align"
        )
    code = EXIT_OK
    for run, _ in runs_in(Path(args.output_dir)):
        try:
            records = [r for _, r in decoded(read_result(run).records, str(run), "scored")]
        except ValueError as exc:
            raise KitError(str(exc)) from None
        score = open_asr_score(records)
        say(f"{run} (convention: open-asr)")
        say(score.line())
        if args.max_wer is not None:
            value = score.wer / 100 if score.utterances else None
            passed = value is not None and value <= args.max_wer
            shown = "nothing scored" if value is None else f"{value:.2%}"
            say(f"gate max-wer {args.max_wer:.2%}: {shown}, {'passed' if passed else 'FAILED'}")
            code = max(code, EXIT_OK if passed else EXIT_NOTHING if value is None else EXIT_GATE)
    return code


def _export(args: argparse.Namespace) -> int:
    # Only the decoding check's runs have references and hypotheses to write.
    from kit.asr.export import export

    try:
        written = export(args.output_dir, args.out, args.format, args.normalizer)
    except ValueError as exc:
        raise KitError(str(exc)) from None
    for path in written:
        say(f"wrote {path}")
    if args.format == "trn" and written:
        import shutil

        ref, hyp = written[0], written[1]
        # Debian's sctk installs sclite behind its own front end.
        sclite = "sctk sclite" if not shutil.which("sclite") and shutil.which("sctk") else "sclite"
        say(f"score them with sclite: {sclite} -r {ref} trn -h {hyp} trn -i rm -o sum stdout")
        # Without -e utf-8, sclite -c counts the bytes of UTF-8 text, not its characters.
        say(f"  characters: {sclite} -r {ref} trn -h {hyp} trn -i rm -c -e utf-8 -o sum stdout")
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    """Add ``score`` and ``export`` to ``kit``'s commands."""
    rescore = commands.add_parser(
        "score",
        help="score a decoding run's stored hypotheses again (another normalizer, a gate); "
        "no decoding",
    )
    rescore.add_argument("output_dir", metavar="OUTPUT_DIR", help="a decoding run or sweep")
    rescore.add_argument(
        "--metric", default="wer,cer", help="what to print: wer, cer or wer,cer (default)"
    )
    rescore.add_argument(
        "--normalizer",
        help="whisper, basic, none, or the dotted path of your own function "
        "(default: the run's scoring.normalizer)",
    )
    rescore.add_argument(
        "--convention",
        choices=("kit", "open-asr"),
        default="kit",
        help="kit: Kit's scoring, as sclite counts (default); open-asr: the Open ASR "
        "Leaderboard's WER and RTFx (Whisper's normaliser, kaldialign merging compounds)",
    )
    rescore.add_argument(
        "--align",
        type=positive,
        metavar="N",
        help="also print the N utterances with the most errors, aligned, and the top substitutions",
    )
    with_gates(rescore)
    rescore.add_argument(
        "--no-write", action="store_true", help="print only; do not write metrics.json"
    )
    rescore.set_defaults(handler=_score)
    export = commands.add_parser(
        "export",
        help="write a decoding run's references and hypotheses for sclite (trn) or ESPnet (scp)",
    )
    export.add_argument("output_dir", metavar="OUTPUT_DIR", help="a decoding run or sweep")
    export.add_argument(
        "--format",
        choices=("trn", "scp"),
        default="trn",
        help="trn: sclite's transcripts, normalised as Kit scored them (default); scp: ESPnet3's "
        "ref.scp/hyp.scp, as decoded",
    )
    export.add_argument(
        "--normalizer",
        help="trn: whisper, basic, none, or the dotted path of your own function "
        "(default: the run's scoring.normalizer)",
    )
    export.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="OUT",
        help="the folder to write (a sweep: one sub-folder per trial)",
    )
    export.set_defaults(handler=_export)
