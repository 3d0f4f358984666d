"""The decoding check: PocketSphinx on speech made with espeak-ng, inline and on workers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import pytest
from omegaconf import DictConfig

import kit
from kit._plugin import env_report

pytest.importorskip("pocketsphinx")
from kit.examples.asr import DecodeProvider, DecodeRunner, build_corpus, read_manifest
from kit.examples.asr.decode import CONFIG_PATH, read_wav

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
        if os.environ.get("CI"):
            pytest.fail("espeak-ng and sox must be installed in CI (.ci/system-deps.sh)")
        pytest.skip("espeak-ng or sox is missing (apt-get install espeak-ng sox)")
    folder = tmp_path_factory.mktemp("asr-data")
    build_corpus(folder)
    return folder


def config(corpus: Path, *overrides: str) -> DictConfig:
    return kit.load_config(CONFIG_PATH, [f"data.root={corpus}", *overrides])


def test_the_corpus_is_16k_mono_wav_with_a_manifest(corpus: Path) -> None:
    entries = read_manifest(corpus / "digits.jsonl")
    assert len(entries) == 70 and len(read_manifest(corpus / "sentences.jsonl")) == 30
    assert set(entries[0]) == {"id", "audio", "text"}
    pcm, seconds = read_wav(entries[0]["audio"])
    assert 0.5 < seconds < 10 and len(pcm) == int(seconds * 16000) * 2


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


def test_a_mistyped_decoder_mode_is_a_config_error(corpus: Path) -> None:
    runner = DecodeRunner(DecodeProvider(config(corpus, "decoder.mode=grammer")))
    with pytest.raises(
        kit.ConfigError,
        match=r"decoder\.mode: 'grammer' is not a valid choice; did you mean 'grammar'",
    ):
        runner.run(range(2))


def test_grammar_mode_beats_the_language_model_on_digits(corpus: Path, local: dict) -> None:
    results = {}
    for mode in ("lm", "grammar"):
        cfg = config(corpus, f"decoder.mode={mode}", "items.stop=20")
        results[mode] = DecodeRunner(DecodeProvider(cfg), parallel=local).run(range(20))
    lm, grammar = results["lm"].summary, results["grammar"].summary
    # Measured here on the full digits set: LM 101% WER, grammar 32.5% (synthetic voice).
    assert grammar["wer"] < 0.5 < lm["wer"]
    assert grammar["utterances"] == 20 and 0 < grammar["rtf"] < 1
    record = results["grammar"].records[0]
    assert set(record) >= {"id", "ref", "hyp", "duration", "errors", "metrics"}
    assert record["metrics"]["wer"] == record["errors"] / max(1, record["words"])


def test_inline_and_workers_decode_the_same_and_build_once(corpus: Path, local: dict) -> None:
    cfg = config(corpus, "decoder.mode=grammar", "items.stop=12")
    inline = DecodeRunner(DecodeProvider(cfg)).run(range(12))
    provider = DecodeProvider(cfg)
    runner = DecodeRunner(provider, parallel=local)
    on_workers = runner.run(range(12))
    runner.run(range(12))
    assert [r["hyp"] for r in inline.records] == [r["hyp"] for r in on_workers.records]
    client = kit.get_session(local).client
    builds = [r["builds"] for r in client.run(env_report, provider.env_name()).values()]
    assert builds == [1, 1]


def test_an_utterance_decodes_the_same_whatever_the_decoder_saw_before(corpus: Path) -> None:
    # Which worker decodes an item, and after which items, must not change its hypothesis.
    from kit.examples.asr.decode import make_decoder

    entries = read_manifest(corpus / "digits.jsonl")
    used = make_decoder({"mode": "grammar"})
    after_others = [DecodeRunner.forward(i, used, entries)["hyp"] for i in range(70)]
    fresh = [
        DecodeRunner.forward(i, make_decoder({"mode": "grammar"}), entries)["hyp"]
        for i in range(35, 70)
    ]
    assert after_others[35:] == fresh


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
            "decoder.mode=grammar",
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


def test_the_demo_prints_both_modes(corpus: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.examples.asr",
            f"data.root={corpus}",
            "items.stop=6",
            f"output_dir={tmp_path}/${{decoder.mode}}",
            "parallel.env=inline",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "== decoder.mode=lm: 6 utterances ==" in result.stdout
    assert "== decoder.mode=grammar: 6 utterances ==" in result.stdout
    assert "WER by decoder mode: lm" in result.stdout
    assert (tmp_path / "grammar" / "report.html").exists()


class TableDataset:
    """A table of rows with decoded audio, shaped like a Hugging Face dataset split."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, idx: int) -> dict:
        return self.rows[idx]


def test_decoded_audio_rows_decode_like_files(corpus: Path) -> None:
    from kit.examples.asr.decode import audio_pcm, make_decoder

    entry = read_manifest(corpus / "digits.jsonl")[1]
    pcm, _ = read_wav(entry["audio"])
    samples = [
        int.from_bytes(pcm[i : i + 2], "little", signed=True) / 32767 for i in range(0, len(pcm), 2)
    ]
    rows = TableDataset(
        [{"audio": {"array": samples, "sampling_rate": 16000}, "text": entry["text"]}]
    )
    decoder = make_decoder({"mode": "grammar"})
    from_rows = DecodeRunner.forward(0, decoder, rows)
    from_file = DecodeRunner.forward(0, make_decoder({"mode": "grammar"}), [entry])
    assert from_rows["hyp"] == from_file["hyp"] and from_rows["id"] == "0"
    with pytest.raises(ValueError, match="resample it to 16 kHz"):
        audio_pcm({"array": [0.0], "sampling_rate": 8000})


def test_an_hf_dataset_without_the_package_names_it() -> None:
    from kit.examples.asr.decode import load_dataset_entries

    try:
        import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install datasets"):
            load_dataset_entries({"hf": {"path": "somewhere"}})
    else:
        pytest.skip("datasets is installed")
