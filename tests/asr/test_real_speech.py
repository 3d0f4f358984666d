"""Real human speech: CMU ARCTIC recordings against flite's voices built from the same speakers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kit
from kit.asr import DecodeProvider, DecodeRunner, corpus_wer
from kit.examples.asr import CONFIG_PATH
from kit.examples.asr.corpus import synthesize
from tests.real_speech import ARCTIC, CHANNELS, CHANNELS_JSGF, arctic, channel_names

pytest.importorskip("faster_whisper")
pytest.importorskip("pocketsphinx")


def decode(manifest: Path, out: Path, count: int, *overrides: str) -> kit.RunResult:
    cfg = kit.load_config(CONFIG_PATH, [f"data.manifest={manifest}", *overrides])
    return DecodeRunner(DecodeProvider(cfg), output_dir=out).run(range(count))


def test_arctic_speakers_decode_to_their_prompts_as_flites_voices_of_them_do(
    tmp_path: Path,
) -> None:
    if shutil.which("flite") is None:
        pytest.skip("flite missing (apt-get install flite)")
    recordings = arctic()
    lines = []
    for speaker, (*_, prompt) in ARCTIC.items():
        lines.append({"id": f"real-{speaker}", "audio": str(recordings / f"{speaker}.wav")})
        # flite's awb and slt voices are built from these ARCTIC speakers' recordings.
        synthesize(prompt, tmp_path / f"flite-{speaker}.wav", speaker)
        lines.append({"id": f"flite-{speaker}", "audio": str(tmp_path / f"flite-{speaker}.wav")})
        for line in lines[-2:]:
            line.update(text=prompt, speaker=speaker)
    manifest = tmp_path / "arctic.jsonl"
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = decode(manifest, tmp_path / "whisper", len(lines))
    by_id = {r["id"]: r for r in result.records}
    real = corpus_wer([by_id[f"real-{s}"] for s in ARCTIC])
    flite = corpus_wer([by_id[f"flite-{s}"] for s in ARCTIC])
    print(f"Whisper tiny.en: real ARCTIC {real['wer']:.1%}, flite {flite['wer']:.1%}")
    # Each recording is its ARCTIC prompt: at most one word of each in doubt.
    for speaker in ARCTIC:
        record = by_id[f"real-{speaker}"]
        assert record["errors"] <= 1, (record["ref_norm"], record["hyp_norm"])
    # The real speakers are decoded at least as well as the synthetic voices built from them.
    assert real["wer"] <= flite["wer"]
    assert (recordings / "awb.COPYING").read_text().startswith("\nThis voice is free for use")


def test_alsas_spoken_channel_names_decode_in_grammar_mode(tmp_path: Path) -> None:
    manifest = channel_names(tmp_path)
    grammar = decode(
        manifest,
        tmp_path / "grammar",
        len(CHANNELS),
        "decoder.engine=pocketsphinx",
        "decoder.mode=grammar",
        f"decoder.grammar='{CHANNELS_JSGF}'",
    )
    language_model = decode(manifest, tmp_path / "lm", len(CHANNELS), "decoder.engine=pocketsphinx")
    assert [r["hyp"] for r in grammar.records] == list(CHANNELS.values())
    assert grammar.summary["wer"] == 0.0 < language_model.summary["wer"]
