"""``kit score``: a decoding run's stored hypotheses scored again, with a gate; no decoding."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import kit
from kit.asr import DecodeProvider, DecodeRunner
from kit.asr.open_asr import open_asr_score
from kit.asr.wer import score
from kit.cli import EXIT_GATE, EXIT_NOTHING, EXIT_USAGE, main
from kit.examples.asr import CONFIG_PATH
from tests.speech import write_wav

pytest.importorskip("pocketsphinx")

ITEMS = [*range(0, 100, 7)]  # every voice, sentences and digit strings


def decode(corpus: Path, out: Path, *overrides: str) -> kit.RunResult:
    cfg = kit.load_config(
        CONFIG_PATH, [f"data.root={corpus}", "decoder.engine=pocketsphinx", *overrides]
    )
    return DecodeRunner(DecodeProvider(cfg), output_dir=out).run(ITEMS)


@pytest.fixture(scope="module")
def decoded(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, kit.RunResult]:
    """One decoding run of ``ITEMS`` for the module's tests that only read it again.

    Decoded from a copy of the corpus, removed once decoded: scoring again needs
    the hypotheses, not the recordings. Each test takes a copy (:func:`run_copy`).
    """
    folder = tmp_path_factory.mktemp("decoded")
    shutil.copytree(corpus, folder / "audio")
    result = decode(folder / "audio", folder / "run")
    shutil.rmtree(folder / "audio")
    return folder / "run", result


def run_copy(decoded: tuple[Path, kit.RunResult], out: Path) -> kit.RunResult:
    """Copy the module's decoding run to ``out``, as if it had been decoded there."""
    shutil.copytree(decoded[0], out)
    return decoded[1]


def test_kit_score_scores_stored_hypotheses_again_without_their_audio(
    decoded: tuple[Path, kit.RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_copy(decoded, tmp_path / "run")  # its audio is gone
    assert main(["score", str(tmp_path / "run"), "--align", "2"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"{tmp_path / 'run'} (normalizer: whisper)\n")
    assert "speaker espeak" in printed and "speaker slt" in printed
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    overall = metrics["overall"]
    low, high = overall["wer_interval"]
    assert low <= overall["wer"] <= high and low < high
    # The worst utterances, aligned as sclite prints them, and the substitutions counted.
    worst = metrics["worst"][0]
    assert f"\n{worst['id']} ({worst['errors']} errors in {worst['words']} words)\n  REF: " in (
        printed
    )
    assert worst["errors"] == max(r["errors"] for r in result.records)
    assert sum(n for _, _, n in metrics["top_substitutions"]) <= overall["substitutions"]
    assert "\ntop substitutions: " in printed
    # The same normaliser as the run's: the same counts as when it decoded.
    for key in ("wer", "substitutions", "deletions", "insertions", "words", "cer", "chars"):
        assert overall[key] == result.summary[key], key
    assert overall["utterances"] == len(ITEMS) and metrics["passed"] is True
    assert set(metrics["by_speaker"]) == {"slt", "rms", "awb", "kal16", "espeak"}
    words = sum(row["words"] for row in metrics["by_speaker"].values())
    assert words == overall["words"]
    # Another normaliser: other counts, from the same stored hypotheses.
    assert main(["score", str(tmp_path / "run"), "--normalizer", "none", "--no-write"]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "run" / "metrics.json").read_text()) == metrics
    assert main(["score", str(tmp_path / "run"), "--normalizer", "none"]) == 0
    raw = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert raw["normalizer"] == "none" and raw["overall"]["wer"] > overall["wer"]


def test_a_gate_exceeded_exits_with_its_own_code_in_kit_score_and_kit_run(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    common = ["run", str(CONFIG_PATH), f"data.root={corpus}", "decoder.engine=pocketsphinx"]
    common += ["items.stop=6", "parallel.env=inline", f"output_dir={out}"]
    assert main([*common, "--max-wer", "0", "--max-cer", "100%"]) == EXIT_GATE
    printed = capsys.readouterr().out.splitlines()
    wer = json.loads((out / "result.json").read_text())["summary"]["wer"]
    assert printed[-2] == f"gate max-wer 0.00%: {wer:.2%}, FAILED"
    assert printed[-1].startswith("gate max-cer 100.00%: ") and printed[-1].endswith(", passed")
    assert main(["score", str(out), "--max-wer", "0"]) == EXIT_GATE
    assert capsys.readouterr().out.splitlines()[-1] == f"gate max-wer 0.00%: {wer:.2%}, FAILED"
    assert json.loads((out / "metrics.json").read_text())["passed"] is False
    assert main(["score", str(out), "--max-wer", "1", "--max-cer", "1"]) == 0
    assert json.loads((out / "metrics.json").read_text())["gate"]["max_wer"] == {
        "limit": 1.0,
        "value": wer,
        "passed": True,
    }


def test_a_normaliser_a_folder_names_is_imported_only_when_you_name_it(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    result = decode(corpus, out, "scoring.normalizer=tests.speech.shout")
    assert result.records[0]["ref_norm"].isupper()
    assert main(["score", str(out)]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"kit: error: {out}: the run was scored with a normaliser of its own "
        "('tests.speech.shout'); Kit does not import code a folder names: choose one with "
        "--normalizer (whisper, basic, none, or the dotted path of your own function, after "
        "reading it)\n"
    )
    assert main(["score", str(out), "--normalizer", "tests.speech.shout"]) == 0
    assert json.loads((out / "metrics.json").read_text())["overall"]["wer"] == result.summary["wer"]


def test_bad_scoring_input_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["score", str(tmp_path), "--metric", "wer,bleu"]) == EXIT_USAGE
    assert capsys.readouterr().err == "kit: error: --metric 'wer,bleu': give wer, cer or wer,cer\n"
    with pytest.raises(SystemExit) as exit_info:
        main(["score", str(tmp_path), "--max-wer", "ten"])
    assert exit_info.value.code == EXIT_USAGE
    assert "argument --max-wer: 'ten' is not an error rate (0.1 or 10%)" in capsys.readouterr().err
    assert main(["run", str(CONFIG_PATH), "-m", "decoder.beam_size=1,2", "--max-wer", "0.1"]) == 2
    assert "--max-wer and --max-cer gate one run; score each trial" in capsys.readouterr().err
    with pytest.raises(kit.ConfigError, match=r"scoring.normalizer: choose whisper, basic or"):
        DecodeProvider(kit.load_config(CONFIG_PATH, ["scoring.normalizer=whispr"]))


def test_each_recognizers_first_call_is_its_warm_up_and_rtf_warm_leaves_it_out(
    corpus: Path, tmp_path: Path, local: dict[str, object]
) -> None:
    # Options of its own: an env (a recognizer) no other test built on the shared workers.
    cfg = kit.load_config(
        CONFIG_PATH,
        [f"data.root={corpus}", "decoder.engine=pocketsphinx", "++decoder.options={beam: 1e-30}"],
    )
    runner = DecodeRunner(DecodeProvider(cfg), parallel=local, output_dir=tmp_path / "first")
    first = runner.run(ITEMS)
    # One warm-up call on each worker that decoded, however the items were shared out.
    warm_ups = [r for r in first.records if r["warmup"]]
    assert 1 <= len(warm_ups) <= 2
    decoded = [r for r in first.records if not r["warmup"]]
    expected = sum(r["decode_seconds"] for r in decoded) / sum(r["duration"] for r in decoded)
    # Kept at full precision: a stored summary is data; views round it.
    assert first.summary["rtf_warm"] == pytest.approx(expected, rel=1e-12)
    # The workers' recognizers are warm now: a second decoding has no warm-up to leave out
    # (decoding again: beside the first run, its decodings would be reused).
    again = DecodeRunner(
        DecodeProvider(cfg), parallel=local, output_dir=tmp_path / "again", reuse=False
    )
    assert not any(r["warmup"] for r in again.run(ITEMS).records)


def test_a_co_user_who_can_write_the_run_folder_cannot_make_kit_score_follow_or_run_anything(
    decoded: tuple[Path, kit.RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    result = run_copy(decoded, out)
    victim = tmp_path / "thesis.tex"
    victim.write_text("precious")
    # Planted: metrics.json as a link to a file of the reader's, and config.yaml as a link
    # to a config naming code of the co-user's as the normaliser.
    (out / "metrics.json").symlink_to(victim)
    elsewhere = tmp_path / "planted.yaml"
    elsewhere.write_text("scoring: {normalizer: tests.speech.shout}\n")
    (out / "config.yaml").unlink()
    (out / "config.yaml").symlink_to(elsewhere)
    # The link is neither followed nor renamed over: refused, named, left as it is.
    assert main(["score", str(out)]) == 2
    assert f"{out / 'metrics.json'} is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "precious" and (out / "metrics.json").is_symlink()
    (out / "metrics.json").unlink()
    assert main(["score", str(out)]) == 0
    capsys.readouterr()
    assert victim.read_text() == "precious"
    metrics = json.loads((out / "metrics.json").read_text())
    # The linked config was not read: Kit's own normaliser, the run's own counts.
    assert metrics["normalizer"] == "whisper"
    assert metrics["overall"]["wer"] == result.summary["wer"]
    # A stored config naming code is data: refused, not imported (see the test above).
    (out / "config.yaml").unlink()
    (out / "config.yaml").write_text("scoring: {normalizer: tests.speech.shout}\n")
    assert main(["export", str(out), "-o", str(tmp_path / "trn")]) == 2
    assert "Kit does not import code a folder names" in capsys.readouterr().err


def test_kit_score_and_kit_export_take_a_sweeps_folder_trial_by_trial_and_skip_planted_trials(
    corpus: Path,
    decoded: tuple[Path, kit.RunResult],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sweep = tmp_path / "sweep"
    args = [f"data.root={corpus}", "decoder.engine=pocketsphinx", "items.stop=6"]
    assert (
        main(["sweep", str(CONFIG_PATH), *args, "decoder.mode=lm,grammar", "-o", str(sweep)]) == 0
    )
    capsys.readouterr()
    # A co-user who can write the sweep's folder plants a trial: a link to a run of the
    # reader's elsewhere, and a link to a folder of the reader's that holds no run.
    mine = tmp_path / "mine"
    run_copy(decoded, mine)
    (sweep / "trial-007").symlink_to(mine)
    (sweep / "trial-008").symlink_to(tmp_path, target_is_directory=True)
    # The grammar trial only knows digit strings: many insertions, a WER over 100%, and
    # one trial over the gate fails the command.
    assert main(["score", str(sweep), "--max-wer", "0.99"]) == EXIT_GATE
    printed = capsys.readouterr().out
    verdicts = re.findall(r"gate max-wer 99\.00%: (\d+)\.\d\d%, (passed|FAILED)", printed)
    assert [verdict for _, verdict in verdicts] == ["passed", "FAILED"], printed
    assert int(verdicts[1][0]) >= 100
    # Even past 100%, the table keeps its columns apart.
    assert re.search(r"^all .*\d% +\[\d+\.\d%, \d+\.\d%\] ", printed, re.M), printed
    trials = sorted(p for p in sweep.glob("trial-*") if not p.is_symlink())
    assert [t.name for t in trials] == ["trial-000", "trial-001"]
    for trial in trials:
        assert printed.count(f"{trial} (normalizer: whisper)\n") == 1
        assert json.loads((trial / "metrics.json").read_text())["overall"]["utterances"] == 6
    assert "trial-007" not in printed and "trial-008" not in printed
    assert not (mine / "metrics.json").exists()  # the planted links were not followed
    assert main(["export", str(sweep), "--format", "scp", "-o", str(tmp_path / "scp")]) == 0
    capsys.readouterr()
    written = sorted(str(p.relative_to(tmp_path / "scp")) for p in (tmp_path / "scp").rglob("*"))
    assert written == [
        "trial-000",
        "trial-000/hyp.scp",
        "trial-000/ref.scp",
        "trial-001",
        "trial-001/hyp.scp",
        "trial-001/ref.scp",
    ]


def test_a_gate_on_a_run_that_scored_nothing_fails_with_its_own_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_wav(tmp_path / "silence.wav")
    lines = [
        {"id": "gone", "audio": "missing.wav", "text": "hello there"},
        {"id": "quiet", "audio": "silence.wav", "text": ""},  # no word to score
    ]
    manifest = tmp_path / "test.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    common = ["run", str(CONFIG_PATH), f"data.manifest={manifest}", "decoder.engine=pocketsphinx"]
    common += ["parallel.env=inline"]
    failed, empty = tmp_path / "failed", tmp_path / "empty"
    # Every item failed: that comes first, as in any run that lost items.
    assert main([*common, "items.stop=1", f"output_dir={failed}", "--max-wer", "1%"]) == 1
    assert main(["score", str(failed), "--max-wer", "1%"]) == EXIT_NOTHING
    printed = capsys.readouterr().out.splitlines()
    assert "1 item(s) have no hypothesis (failed or not run): not scored" in printed
    assert printed[-1] == "gate max-wer 1.00%: nothing scored, FAILED"
    # The one item ran, but its reference has no word: no rate to judge either.
    only = ["items.start=1", "items.stop=2", f"output_dir={empty}", "--max-wer", "1%"]
    assert main([*common, *only]) == EXIT_NOTHING
    assert capsys.readouterr().out.splitlines()[-1] == (
        "gate max-wer 1.00%: nothing scored (no wer to judge), FAILED"
    )
    assert main(["score", str(empty), "--max-wer", "1%", "--max-cer", "1%"]) == EXIT_NOTHING
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "gate max-wer 1.00%: nothing scored, FAILED",
        "gate max-cer 1.00%: nothing scored, FAILED",
    ]


def test_the_table_never_cuts_a_speaker_id() -> None:
    from kit.asr import score
    from kit.asr.rescore import Scores, grouped, totals

    # Two chapters of one LibriSpeech reader: alike for their first seven characters.
    records = [
        {"speaker": "1272-128104", **score("a b", "a c")},
        {"speaker": "1272-135031", **score("d", "d")},
    ]
    table = Scores(Path("run"), "none", totals(records), grouped(records, "speaker")).table()
    names = [line.split("  ")[0] for line in table.splitlines()[1:]]
    assert names == ["speaker 1272-128104", "speaker 1272-135031", "all"]


def test_references_without_a_word_give_no_interval_not_a_huge_one() -> None:
    from kit.asr import score
    from kit.asr.rescore import interval

    empty = [score("", "a b c d e f g h i", "none"), score("", "", "none")]
    assert interval(empty) is None  # it was [0%, 900%]: errors over one word
    # A resample of empty references alone has no rate: it leaves the interval out.
    mixed = [score("a b", "a", "none")] * 5 + [score("", "z", "none")]
    low, high = interval(mixed)  # type: ignore[misc]
    assert 0.5 <= low <= high <= 1.0


def test_the_open_asr_convention_scores_as_the_leaderboard_and_gates_on_its_wer(
    decoded: tuple[Path, kit.RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kaldialign import batch_error_rate
    from whisper_normalizer.english import EnglishTextNormalizer

    result = run_copy(decoded, tmp_path / "run")
    assert main(["score", str(tmp_path / "run"), "--convention", "open-asr"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"{tmp_path / 'run'} (convention: open-asr)"
    # The leaderboard's score_results, step by step: Whisper's English normaliser, then
    # kaldialign with merge_compounds; RTFx over the timed (warm) utterances.
    normalize = EnglishTextNormalizer()
    refs = [tuple(normalize(r["ref"]).split()) for r in result.records]
    hyps = [tuple(normalize(r["hyp"]).split()) for r in result.records]
    counted = batch_error_rate(refs, hyps, merge_compounds=True)
    warm = [r for r in result.records if not r["warmup"]]
    rtfx = sum(r["duration"] for r in warm) / sum(r["decode_seconds"] for r in warm)
    assert printed[1] == (
        f"WER = {round(100 * counted['err_rate'], 2):0.2f} %, RTFx = {round(rtfx, 4):0.2f} "
        f"({len(ITEMS)} utterances; S {counted['sub']}, D {counted['del']}, I {counted['ins']})"
    )
    # A split compound is no error to the leaderboard; to sclite, a substitution and more.
    scored = open_asr_score([{"ref": "she sells sea shells", "hyp": "she sells seashells"}])
    assert (scored.wer, scored.rtfx) == (0.0, None)
    assert score("she sells sea shells", "she sells seashells", "whisper")["errors"] == 2
    assert main(
        ["score", str(tmp_path / "run"), "--convention", "open-asr", "--max-wer", "0.1%"]
    ) == (EXIT_GATE if counted["err_rate"] > 0.001 else 0)
    assert main(["score", str(tmp_path / "run"), "--convention", "open-asr", "--max-cer", "1"]) == (
        EXIT_USAGE
    )
    assert "leave out --normalizer, --max-cer and --align" in capsys.readouterr().err
