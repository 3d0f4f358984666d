"""Your own test sets: Kaldi data directories and several named sets in one run."""

from __future__ import annotations

import json
import os
import shutil
import wave
from pathlib import Path

import pytest

import kit
from kit._from_config import build_runner
from kit.asr import DecodeProvider, DecodeRunner
from kit.asr.data import read_kaldi_dir, read_manifest
from kit.cli import main
from kit.examples.asr import CONFIG_PATH
from tests.speech import write_wav

pytest.importorskip("pocketsphinx")

PICKS = [0, 5, 23, 44, 61, 87]  # sentences and digit strings of several voices


def kaldi_dir(corpus: Path, folder: Path, picks: list[int] = PICKS) -> list[dict[str, str]]:
    """Write ``folder`` as a Kaldi data dir of the corpus utterances ``picks``; return them."""
    entries = [read_manifest(corpus / "corpus.jsonl")[i] for i in picks]
    (folder / "wav").mkdir(parents=True)
    scp, text, spk = [], [], []
    for entry in entries:
        shutil.copy(entry["audio"], folder / "wav" / f"{entry['id']}.wav")
        scp.append(f"{entry['id']} wav/{entry['id']}.wav\n")  # relative to the data dir
        text.append(f"{entry['id']} {entry['text']}\n")
        spk.append(f"{entry['id']} {entry['speaker']}\n")
    (folder / "wav.scp").write_text("".join(scp))
    (folder / "text").write_text("".join(text))
    (folder / "utt2spk").write_text("".join(spk))
    return entries


def decode(corpus: Path, out: Path, *overrides: str, items: list[int] | range) -> kit.RunResult:
    cfg = kit.load_config(
        CONFIG_PATH,
        [f"data.root={corpus}", "decoder.engine=pocketsphinx", "decoder.mode=lm", *overrides],
    )
    return DecodeRunner(DecodeProvider(cfg), output_dir=out).run(items)


def test_a_kaldi_data_dir_decodes_as_the_same_utterances_from_a_manifest(
    corpus: Path, tmp_path: Path
) -> None:
    entries = kaldi_dir(corpus, tmp_path / "data")
    from_kaldi = decode(
        corpus, tmp_path / "k", f"data.kaldi={tmp_path / 'data'}", items=range(len(PICKS))
    )
    from_manifest = decode(corpus, tmp_path / "m", items=PICKS)
    assert [r["id"] for r in from_kaldi.records] == [e["id"] for e in entries]
    assert [r["speaker"] for r in from_kaldi.records] == [e["speaker"] for e in entries]
    assert [r["hyp"] for r in from_kaldi.records] == [r["hyp"] for r in from_manifest.records]
    assert from_kaldi.summary["wer"] == from_manifest.summary["wer"]


def test_segments_of_one_recording_decode_as_the_utterances_they_cut(
    corpus: Path, tmp_path: Path
) -> None:
    entries = [read_manifest(corpus / "corpus.jsonl")[i] for i in PICKS[:3]]
    data = tmp_path / "data"
    data.mkdir()
    # One long recording of three utterances, as a meeting or a broadcast is kept.
    segments, start = [], 0
    with wave.open(str(data / "session.wav"), "wb") as joined:
        joined.setnchannels(1)
        joined.setsampwidth(2)
        joined.setframerate(16000)
        for entry in entries:
            with wave.open(entry["audio"]) as part:
                frames = part.readframes(part.getnframes())
            joined.writeframes(frames)
            end = start + len(frames) // 2
            segments.append(f"{entry['id']} session {start / 16000} {end / 16000}\n")
            start = end
    (data / "wav.scp").write_text(f"session {data / 'session.wav'}\n")  # an absolute path
    (data / "segments").write_text("".join(segments))
    (data / "text").write_text("".join(f"{e['id']} {e['text']}\n" for e in entries))
    read = read_kaldi_dir(data)
    assert [e["id"] for e in read] == [e["id"] for e in entries]
    assert "speaker" not in read[0]  # no utt2spk
    cut = decode(corpus, tmp_path / "k", f"data.kaldi={data}", items=range(3))
    whole = decode(corpus, tmp_path / "m", items=PICKS[:3])
    assert [r["hyp"] for r in cut.records] == [r["hyp"] for r in whole.records]
    assert [r["duration"] for r in cut.records] == [r["duration"] for r in whole.records]


def write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return write_wav(tmp_path / "clip.wav")


def test_bad_kaldi_data_is_refused_naming_the_file_the_line_and_the_utterance(
    tmp_path: Path, clip: Path
) -> None:
    def refused(name: str, **files: str) -> str:
        with pytest.raises((ValueError, FileNotFoundError)) as info:
            read_kaldi_dir(write(tmp_path / name, **files))
        return str(info.value)

    d = tmp_path
    piped = refused("pipe", wav_scp="r1 sox in.flac -t wav - |\n", text="r1 hi\n")
    assert piped == (
        f"{d / 'pipe' / 'wav.scp'}, line 1: recording r1 is a command ('sox in.flac -t wav - |'); "
        "Kit does not run commands a data directory holds: write the audio to WAV files first "
        "and list their paths"
    )
    assert refused("orphan", wav_scp=f"r1 {clip}\n", text="r1 hi\nr2 there\n") == (
        f"{d / 'orphan' / 'text'}, line 2: utterance r2 has no audio: wav.scp has no recording "
        "of that id (and there is no segments file)"
    )
    assert refused("gone", wav_scp=f"r0 {clip}\nr1 nowhere.wav\n", text="r0 a\nr1 hi\n") == (
        f"{d / 'gone' / 'wav.scp'}, line 2: recording r1: no such file: "
        f"{d / 'gone' / 'nowhere.wav'}"
    )
    write_wav(tmp_path / "phone.wav", rate=8000)
    narrow = refused("rate", wav_scp=f"r1 {tmp_path / 'phone.wav'}\n", text="r1 hi\n")
    assert narrow.startswith(
        f"{d / 'rate' / 'wav.scp'}, line 1: recording r1: {tmp_path / 'phone.wav'} is 8000 Hz, "
        "1 channel(s), 16-bit; the recognizers take 16 kHz 16-bit mono: convert it with `sox "
    )
    assert refused("twice", wav_scp=f"r1 {clip}\n", text="r1 hi\nr1 again\n") == (
        f"{d / 'twice' / 'text'}, line 2: r1 appears again (first on line 1); each key once"
    )
    assert refused("seg", wav_scp=f"r1 {clip}\n", segments="u1 r9 0 0.1\n", text="u1 hi\n") == (
        f"{d / 'seg' / 'segments'}, line 1: utterance u1 is in recording r9, which wav.scp "
        "does not list"
    )
    fifo = tmp_path / "fifo.wav"
    os.mkfifo(fifo)  # opening it to read would wait for a writer for ever
    assert refused("fifo", wav_scp=f"r1 {fifo}\n", text="r1 hi\n") == (
        f"{d / 'fifo' / 'wav.scp'}, line 1: recording r1: {fifo} is not a regular file (a FIFO "
        "or a device, say); give a WAV file"
    )
    latin = write(tmp_path / "latin", wav_scp=f"r1 {clip}\n")
    (latin / "text").write_bytes("r1 café\n".encode("latin-1"))
    with pytest.raises(kit.ConfigError) as info:
        read_kaldi_dir(latin)
    assert str(info.value) == (
        f"{latin / 'text'}, line 1: not UTF-8 (byte 0xe9 at column 7); save it as UTF-8"
    )
    assert refused("notext", wav_scp=f"r1 {clip}\n").startswith(
        f"data.kaldi: {d / 'notext'} has no text; a Kaldi data directory needs wav.scp"
    )


def test_named_test_sets_run_as_one_and_score_per_set(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kaldi_dir(corpus, tmp_path / "clean", PICKS[:3])
    kaldi_dir(corpus, tmp_path / "other", PICKS[3:])
    out = tmp_path / "run"
    sets = f"{{clean: {{kaldi: {tmp_path / 'clean'}}}, other: {{kaldi: {tmp_path / 'other'}}}}}"
    result = decode(corpus, out, f"data.sets={sets}", items=range(len(PICKS)))
    assert [r["set"] for r in result.records] == ["clean"] * 3 + ["other"] * 3
    assert main(["score", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "\nset clean " in printed and "\nset other " in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["by_set"]) == {"clean", "other"}
    assert sum(row["words"] for row in metrics["by_set"].values()) == metrics["overall"]["words"]
    assert metrics["overall"]["words"] == result.summary["words"]


def test_a_manifest_naming_a_fifo_fails_that_item_without_waiting_on_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.wav"
    os.mkfifo(fifo)  # opening it to read would wait for a writer for ever
    write_wav(tmp_path / "ok.wav")
    manifest = tmp_path / "test.jsonl"
    manifest.write_text(
        json.dumps({"id": "ok", "audio": "ok.wav", "text": "hi"})
        + "\n"
        + json.dumps({"id": "fifo", "audio": "fifo.wav", "text": "hi"})
        + "\n"
    )
    cfg = kit.load_config(CONFIG_PATH, [f"data.manifest={manifest}", "decoder.engine=pocketsphinx"])
    result = DecodeRunner(DecodeProvider(cfg), output_dir=tmp_path / "out").run(2)
    assert result.records[0] is not None
    assert [error.index for error in result.errors] == [1]
    assert "fifo.wav is not a regular file" in str(result.errors[0])


def test_without_an_items_stop_a_data_dir_runs_its_whole_set_and_no_more(
    tmp_path: Path, clip: Path
) -> None:
    # The example config's items ran 250 (the generated corpus): on a 3-utterance dir,
    # 247 items failed with "list index out of range".
    three = write(tmp_path / "three", wav_scp=f"r1 {clip}\n", text="a x\nb y\nc z\n")
    write(three, segments="a r1 0 0.3\nb r1 0.3 0.6\nc r1 0.6 0.9\n")
    _, items = build_runner(kit.load_config(CONFIG_PATH, [f"data.kaldi={three}"]))
    assert items == range(3)
    _, narrowed = build_runner(
        kit.load_config(CONFIG_PATH, [f"data.kaldi={three}", "items.stop=2"])
    )
    assert narrowed == range(2)  # the user narrows them
