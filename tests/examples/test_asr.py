"""The decoding check: Whisper and PocketSphinx on speech made with flite and espeak-ng."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

import kit
from kit.cluster._plugin import env_report

pytest.importorskip("pocketsphinx")
pytest.importorskip("faster_whisper")
from kit.asr import DecodeProvider, DecodeRunner, read_manifest
from kit.asr.data import read_wav
from kit.asr.recognizers import current_threads, make_recognizer
from kit.asr.wer import corpus_wer
from kit.examples.asr import CONFIG_PATH, build_corpus
from kit.examples.asr.corpus import VOICES
from tests.slurm import slurm_parallel
from tests.speech import DIGITS, SENTENCES
from tests.workloads import IndexProvider, WhichWorker

ROOT = Path(__file__).resolve().parents[2]


def config(corpus: Path, *overrides: str) -> DictConfig:
    return kit.load_config(CONFIG_PATH, [f"data.root={corpus}", "items.stop=100", *overrides])


def positions(corpus: Path, speakers: tuple[str, ...]) -> list[int]:
    entries = read_manifest(corpus / "corpus.jsonl")
    return [i for i, entry in enumerate(entries) if entry["speaker"] in speakers]


def test_the_corpus_is_16k_mono_wav_with_a_speaker_per_line(corpus: Path) -> None:
    entries = read_manifest(corpus / "corpus.jsonl")
    assert len(entries) == 5 * (SENTENCES + DIGITS)
    assert len(read_manifest(corpus / "digits.jsonl")) == 5 * DIGITS
    assert set(entries[0]) == {"id", "audio", "text", "speaker"}
    assert {entry["speaker"] for entry in entries} == set(VOICES)
    # every voice says the same texts, so voices can be compared
    texts = {v: [e["text"] for e in entries if e["speaker"] == v] for v in VOICES}
    assert len({tuple(t) for t in texts.values()}) == 1
    for entry in entries[:: SENTENCES + DIGITS]:
        pcm, seconds = read_wav(entry["audio"])
        assert 0.5 < seconds < 10 and len(pcm) == int(seconds * 16000) * 2


def test_the_corpus_command_runs_without_a_warning_and_says_its_usage(tmp_path: Path) -> None:
    # `make lab` speaks the corpus this way; runpy used to warn that the package
    # had imported the module before running it.
    command = [sys.executable, "-W", "error", "-m", "kit.examples.asr.corpus", "--help"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(
        "usage: python -m kit.examples.asr.corpus [-h] [--kaldi] [folder]"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_corpus_command_speaks_the_manuals_kaldi_directory(tmp_path: Path) -> None:
    # docs/decoding.md decoded runs/test_voices, which no step of the manual made.
    from kit.asr.data import read_kaldi_dir
    from kit.examples.asr.corpus import main

    assert main([str(tmp_path / "test_voices"), "--kaldi"]) == 0
    entries = read_kaldi_dir(tmp_path / "test_voices")
    assert [(e["id"], e["speaker"]) for e in entries[::6]] == [
        ("awb-s00", "awb"),
        ("rms-s00", "rms"),
    ]
    assert entries[1]["text"] == "she sells sea shells by the sea shore"
    assert len(entries) == 12


def test_an_unknown_voice_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown voice\(s\) alan; known: slt, rms"):
        build_corpus(tmp_path, voices=["slt", "alan"])


def test_manifest_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "m.jsonl"
    bad.write_text('{"id": "a", "audio": "a.wav", "text": "x"}\n{"id": "b", "text": "y"}\n')
    with pytest.raises(ValueError, match=r"m\.jsonl, line 2: missing audio"):
        read_manifest(bad)
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match=r"line 1: not valid JSON"):
        read_manifest(bad)
    with pytest.raises(FileNotFoundError, match=r"data\.manifest: no such file"):
        read_manifest(tmp_path / "nope.jsonl")


def test_a_wav_in_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "stereo.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(44100)
        wav.writeframes(b"\0" * 400)
    with pytest.raises(ValueError, match="need 16 kHz 16-bit mono WAV, got 44100 Hz, 2 channel"):
        read_wav(str(path))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "decoder.engine=wisper",
            r"decoder\.engine: 'wisper' is not a valid choice; did you mean 'whisper'",
        ),
        ("decoder.device=gpu", r"decoder\.device: 'gpu' is not a valid choice"),
        (
            "+decoder.beamsize=3",
            r"decoder\.beamsize: unknown key 'beamsize' in section 'decoder'; "
            r"did you mean 'beam_size'",
        ),
    ],
)
def test_a_mistyped_decoder_setting_is_a_config_error(
    corpus: Path, override: str, message: str
) -> None:
    runner = DecodeRunner(DecodeProvider(config(corpus, override)))
    with pytest.raises(kit.ConfigError, match=message):
        runner.run(range(2))


def test_a_mistyped_pocketsphinx_mode_is_a_config_error(corpus: Path) -> None:
    cfg = config(corpus, "decoder.engine=pocketsphinx", "decoder.mode=grammer")
    with pytest.raises(
        kit.ConfigError,
        match=r"decoder\.mode: 'grammer' is not a valid choice; did you mean 'grammar'",
    ):
        DecodeRunner(DecodeProvider(cfg)).run(range(2))


def test_whisper_on_workers_decodes_as_inline_and_loads_the_model_once_each(
    corpus: Path, local: dict
) -> None:
    # Every fourth utterance of two flite voices: sentences and digits, 10 in all (both
    # workers decode, and the whole set's WER bound still says something).
    flite = positions(corpus, ("slt", "rms"))[::4]
    inline = DecodeRunner(DecodeProvider(config(corpus))).run(flite)
    provider = DecodeProvider(config(corpus))
    runner = DecodeRunner(provider, parallel=local)
    on_workers = runner.run(flite)
    runner.run(flite[:4])
    assert [r["hyp"] for r in on_workers.records] == [r["hyp"] for r in inline.records]
    client = kit.get_session(local).client
    builds = [r["builds"] for r in client.run(env_report, provider.env_name()).values()]
    assert builds == [1, 1]
    # Measured here: 1.6% on these 10 utterances (4.1% on all 40 of slt and rms, 0 to 9.3%
    # on any fifth of them); 4.2% on all flite voices of the full corpus (make demo).
    assert on_workers.summary["wer"] <= 0.05
    record = on_workers.records[0]
    assert set(record) >= {"id", "speaker", "ref", "hyp", "ref_norm", "hyp_norm", "errors"}
    assert set(record) >= {"substitutions", "deletions", "insertions", "duration", "metrics"}
    assert set(on_workers.summary) >= {"wer", "substitutions", "deletions", "insertions", "rtf"}


def test_runs_differing_in_beam_size_share_one_loaded_model_per_worker(
    corpus: Path, local: dict
) -> None:
    flite = positions(corpus, ("slt",))[:4]
    names, results = set(), []
    for beam in (1, 3, 5):
        provider = DecodeProvider(config(corpus, f"decoder.beam_size={beam}"))
        names.add(provider.env_name())
        results.append(DecodeRunner(provider, parallel=local).run(flite))
    assert len(names) == 1 and all(r.stats.ok == len(flite) for r in results)
    client = kit.get_session(local).client
    builds = [r["builds"] for r in client.run(env_report, names.pop()).values()]
    assert builds == [1, 1]
    # The other engine is another env; coming back to Whisper loads nothing again.
    sphinx = DecodeProvider(config(corpus, "decoder.engine=pocketsphinx"))
    DecodeRunner(sphinx, parallel=local).run(flite[:2])
    back = DecodeProvider(config(corpus, "decoder.beam_size=2"))
    DecodeRunner(back, parallel=local).run(flite[:2])
    assert [r["builds"] for r in client.run(env_report, back.env_name()).values()] == [1, 1]


def test_whisper_batches_decode_as_one_at_a_time(corpus: Path) -> None:
    flite = positions(corpus, ("awb",))[:6]
    one_by_one = DecodeRunner(DecodeProvider(config(corpus))).run(flite)
    batched = DecodeRunner(DecodeProvider(config(corpus)), batch_size=3).run(flite)
    assert [r["hyp"] for r in batched.records] == [r["hyp"] for r in one_by_one.records]
    by_length = DecodeRunner(
        DecodeProvider(config(corpus)), batch_by="duration", max_batch=6.0
    ).run(flite)
    assert [r["hyp"] for r in by_length.records] == [r["hyp"] for r in one_by_one.records]


def test_utterance_durations_come_from_the_header_or_the_manifest(corpus: Path) -> None:
    entries = read_manifest(corpus / "corpus.jsonl")[:2]
    _, seconds = read_wav(entries[0]["audio"])
    assert DecodeRunner.duration(0, entries) == seconds
    assert DecodeRunner.duration(0, [{**entries[0], "duration": 1.5}]) == 1.5
    rows = [{"audio": {"array": [0.0] * 8000, "sampling_rate": 16000}, "text": ""}]
    assert DecodeRunner.duration(0, rows) == 0.5


def test_whisper_beats_pocketsphinx_on_the_robotic_voice(corpus: Path, local: dict) -> None:
    # Half of espeak's 20 (either half: Whisper 19-23%, PocketSphinx 87-91% here); PocketSphinx
    # searches long on this voice, and 10 utterances settle the question as well as 20.
    espeak = positions(corpus, ("espeak",))[::2]
    results = {
        engine: DecodeRunner(
            DecodeProvider(config(corpus, f"decoder.engine={engine}")), parallel=local
        ).run(espeak)
        for engine in ("whisper", "pocketsphinx")
    }
    # Measured here on the full corpus: Whisper 24.6%, PocketSphinx (LM) 89.2%.
    assert results["whisper"].summary["wer"] < 0.5 < results["pocketsphinx"].summary["wer"]


def test_grammar_mode_beats_the_language_model_on_digits(corpus: Path, local: dict) -> None:
    # Every other digit string (either half: grammar 1-4%, LM 26-35% here): the LM
    # decodes digits at about real time, 40 of them would take the bulk of this test.
    digits = range(0, 5 * DIGITS, 2)
    results = {}
    for mode in ("lm", "grammar"):
        cfg = config(
            corpus,
            f"data.manifest={corpus}/digits.jsonl",
            "decoder.engine=pocketsphinx",
            f"decoder.mode={mode}",
        )
        results[mode] = DecodeRunner(DecodeProvider(cfg), parallel=local).run(digits)
    lm, grammar = results["lm"].summary, results["grammar"].summary
    assert grammar["wer"] < lm["wer"]
    assert grammar["utterances"] == len(digits) and 0 < grammar["rtf"] < 1
    record = results["grammar"].records[0]
    assert record["metrics"]["wer"] == record["errors"] / max(1, record["words"])


def test_an_utterance_decodes_the_same_whatever_the_decoder_saw_before(corpus: Path) -> None:
    # Which worker decodes an item, and after which items, must not change its hypothesis.
    entries = read_manifest(corpus / "digits.jsonl")
    settings = {"engine": "pocketsphinx", "mode": "grammar"}
    used = make_recognizer(settings)
    after_others = [DecodeRunner.forward(i, used, entries)["hyp"] for i in range(len(entries))]
    half = len(entries) // 2
    fresh = [
        DecodeRunner.forward(i, make_recognizer(settings), entries)["hyp"]
        for i in range(half, len(entries))
    ]
    assert after_others[half:] == fresh


@pytest.mark.slow
def test_whisper_decodes_on_slurm_as_inline(
    slurm: None, corpus: Path, tmp_path: Path, closing: list[dict[str, Any]]
) -> None:
    parallel = slurm_parallel(tmp_path, n_workers=1)
    closing.append(parallel)
    some = positions(corpus, ("slt",))[:4]
    inline = DecodeRunner(DecodeProvider(config(corpus))).run(some)
    on_slurm = DecodeRunner(DecodeProvider(config(corpus)), parallel=parallel).run(some)
    assert [r["hyp"] for r in on_slurm.records] == [r["hyp"] for r in inline.records]
    assert corpus_wer(on_slurm.records) == corpus_wer(inline.records)
    assert "driver" not in on_slurm.stats.workers


def test_kit_run_decodes_from_the_config_and_writes_a_report(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit",
            "run",
            str(CONFIG_PATH),
            f"data.root={corpus}",
            "items.stop=8",
            f"output_dir={out}",
            "parallel.env=inline",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    assert "summary: {'wer':" in result.stdout
    assert (out / "report.html").exists()
    stats = json.loads((out / "result.json").read_text())
    assert stats["summary"]["utterances"] == 8


def test_the_demo_prints_both_engines_and_a_wer_table(corpus: Path, tmp_path: Path) -> None:
    # The demo speaks its full corpus into data.root: a copy, so the shared one
    # (and the utterances other tests pick from it) stays as it was.
    data = shutil.copytree(corpus, tmp_path / "asr-data")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.examples.asr",
            f"data.root={data}",
            "items.stop=6",
            f"output_dir={tmp_path}/${{decoder.engine}}",
            "parallel.env=inline",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "== decoder.engine=whisper: 6 utterances ==" in result.stdout
    assert "== decoder.engine=pocketsphinx: 6 utterances ==" in result.stdout
    table = result.stdout.split("WER by voice and engine")[1].splitlines()
    assert table[1].split() == ["voice", "whisper", "pocketsphinx"]
    assert table[2].split()[0] == "slt" and table[-2].startswith("flite voices")
    assert (tmp_path / "pocketsphinx" / "report.html").exists()


class TableDataset:
    """A table of rows with decoded audio, shaped like a Hugging Face dataset split."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, idx: int) -> dict:
        return self.rows[idx]


def test_decoded_audio_rows_decode_like_files(corpus: Path) -> None:
    from kit.asr.data import audio_pcm

    entry = read_manifest(corpus / "digits.jsonl")[1]
    pcm, _ = read_wav(entry["audio"])
    # As soundfile (and so datasets and lhotse) reads 16-bit PCM: n / 32768.
    samples = [
        int.from_bytes(pcm[i : i + 2], "little", signed=True) / 32768 for i in range(0, len(pcm), 2)
    ]
    assert audio_pcm({"array": samples, "sampling_rate": 16000})[0] == pcm  # the same samples
    rows = TableDataset(
        [{"audio": {"array": samples, "sampling_rate": 16000}, "text": entry["text"]}]
    )
    recognizer = make_recognizer({"engine": "whisper"})
    from_rows = DecodeRunner.forward(0, recognizer, rows)
    from_file = DecodeRunner.forward(0, recognizer, [entry])
    assert from_rows["hyp"] == from_file["hyp"] and from_rows["id"] == "0"
    with pytest.raises(ValueError, match="resample it to 16 kHz"):
        audio_pcm({"array": [0.0], "sampling_rate": 8000})


def test_decoding_threads_default_to_the_workers_threads_and_inline_to_every_core(
    local: dict[str, Any], local_client: Any
) -> None:
    workers = list(local_client.nthreads())
    on_workers = [
        local_client.submit(current_threads, workers=[w], pure=False).result(timeout=60)
        for w in workers
    ]
    assert on_workers == [1] * len(workers)
    # Also where a recognizer is made: in the env a worker builds, outside any task (a
    # model sized to every core there made two workers' Whisper 4x slower on 2 cores).
    built = WhichWorker(IndexProvider({}), parallel=local).run(range(8)).records
    assert {r["decoding_threads"] for r in built} == {1}
    assert current_threads() == os.cpu_count()
