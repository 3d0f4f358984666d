"""Lhotse CutSet manifests, as icefall and ESPnet's Lhotse recipes write them, decoded by Kit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import kit
from kit.asr.data import LhotseCuts, read_manifest
from kit.cli import EXIT_USAGE, main
from kit.examples.asr import CONFIG_PATH
from tests.asr.test_kaldi import PICKS, decode
from tests.speech import write_wav

pytest.importorskip("pocketsphinx")
lhotse = pytest.importorskip("lhotse")


def cutset(entries: list[dict[str, str]], path: Path) -> Path:
    """Write the utterances as a CutSet manifest, with lhotse's own constructors."""
    cuts = []
    for entry in entries:
        recording = lhotse.Recording.from_file(entry["audio"], recording_id=entry["id"])
        supervision = lhotse.SupervisionSegment(
            id=entry["id"],
            recording_id=entry["id"],
            start=0.0,
            duration=recording.duration,
            text=entry["text"],
            speaker=entry.get("speaker"),
        )
        cuts.append(
            lhotse.MonoCut(
                id=entry["id"],
                start=0.0,
                duration=recording.duration,
                channel=0,
                recording=recording,
                supervisions=[supervision],
            )
        )
    lhotse.CutSet.from_cuts(cuts).to_file(path)
    return path


def test_a_cutset_decodes_as_the_same_utterances_from_a_manifest(
    corpus: Path, tmp_path: Path
) -> None:
    entries = [read_manifest(corpus / "corpus.jsonl")[i] for i in PICKS]
    manifest = cutset(entries, tmp_path / "cuts.jsonl.gz")
    from_cuts = decode(corpus, tmp_path / "c", f"data.lhotse={manifest}", items=range(len(PICKS)))
    from_files = decode(corpus, tmp_path / "m", items=PICKS)
    assert [r["id"] for r in from_cuts.records] == [e["id"] for e in entries]
    assert [r["speaker"] for r in from_cuts.records] == [e["speaker"] for e in entries]
    # lhotse reads the same samples as the WAV files hold: the same hypotheses.
    assert [r["hyp"] for r in from_cuts.records] == [r["hyp"] for r in from_files.records]


def test_a_cut_the_recognizers_cannot_take_is_refused_naming_it(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "phone.wav", rate=8000)
    manifest = cutset(
        [{"id": "call-1", "audio": str(path), "text": "hello"}], tmp_path / "cuts.jsonl.gz"
    )
    with pytest.raises(ValueError) as info:
        LhotseCuts(manifest)
    assert str(info.value) == (
        f"{manifest}, cut 0 (call-1): 8000 Hz, 1 channel(s); the recognizers take 16 kHz mono: "
        "write the cuts with `cuts.resample(16000).to_file(...)` (and one channel)"
    )
    path.unlink()
    with pytest.raises(ValueError, match=r"cut 0 \(call-1\): 8000 Hz"):
        LhotseCuts(manifest)  # the rate is in the manifest: checked before the file
    with pytest.raises(FileNotFoundError, match=r"data.lhotse: no such file: "):
        LhotseCuts(tmp_path / "nope.jsonl.gz")


def pipe_recording(marker: Path, audio: Path, kind: str = "url") -> lhotse.Recording:
    """A recording lhotse reads by running a shell command that leaves ``marker`` behind."""
    command = f"touch {marker}; cat {audio}"
    source = f"pipe:{command}" if kind == "url" else command
    return lhotse.Recording(
        id="piped",
        sources=[lhotse.AudioSource(type=kind, channels=[0], source=source)],
        sampling_rate=16000,
        num_samples=1600,
        duration=0.1,
    )


def mono(cut_id: str, recording: lhotse.Recording) -> lhotse.MonoCut:
    supervision = lhotse.SupervisionSegment(
        id=cut_id, recording_id=recording.id, start=0.0, duration=0.1, text="hello"
    )
    return lhotse.MonoCut(
        id=cut_id,
        start=0.0,
        duration=0.1,
        channel=0,
        recording=recording,
        supervisions=[supervision],
    )


@pytest.mark.parametrize("kind", ["url", "command", "mixed"])
def test_a_cut_whose_audio_runs_a_command_is_refused_and_the_command_never_runs(
    kind: str, tmp_path: Path
) -> None:
    marker, clip = tmp_path / "ran", write_wav(tmp_path / "clip.wav")
    plain = mono("plain", lhotse.Recording.from_file(clip, recording_id="plain"))
    piped = mono("piped", pipe_recording(marker, clip, "command" if kind == "command" else "url"))
    # A mixed cut reads every track's recording: the command hides in its second track.
    cut = plain.mix(piped) if kind == "mixed" else piped
    manifest = tmp_path / "cuts.jsonl.gz"
    lhotse.CutSet.from_cuts([plain.with_id("first"), cut.with_id("second")]).to_file(manifest)
    with pytest.raises(kit.ConfigError) as info:
        LhotseCuts(manifest)
    assert str(info.value).startswith(f"{manifest}, cut 1 (second): its audio is a ")
    assert str(info.value).endswith(
        "; Kit reads a manifest's audio from local files only, never running or fetching what "
        "a data file names: write the audio to files first and list their paths"
    )
    code = main(["run", str(CONFIG_PATH), f"data.lhotse={manifest}", "parallel.env=inline"])
    assert code == EXIT_USAGE
    assert not marker.exists()


def test_a_cut_reading_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.wav"
    os.mkfifo(fifo)  # reading it would wait for a writer for ever
    recording = lhotse.Recording(
        id="fifo",
        sources=[lhotse.AudioSource(type="file", channels=[0], source=str(fifo))],
        sampling_rate=16000,
        num_samples=1600,
        duration=0.1,
    )
    manifest = tmp_path / "cuts.jsonl.gz"
    lhotse.CutSet.from_cuts([mono("f", recording)]).to_file(manifest)
    with pytest.raises(kit.ConfigError, match=r"fifo\.wav is not a regular file"):
        LhotseCuts(manifest)


def audio_extensions() -> list[str]:
    """Every extension lhotse reads audio by: libsndfile's formats, its video list, its specials."""
    import soundfile
    from lhotse.audio.backend import SUPPORTED_VIDEO_EXTENSIONS

    known = {f".{name.lower()}" for name in soundfile.available_formats()}
    known |= {extension.lower() for extension in SUPPORTED_VIDEO_EXTENSIONS}
    return sorted(known | {".sph", ".shn", ".opus", ".mp3", ".m4b", ".aac", ".wma", ".mka"})


#: Backends lhotse has that start a process: a user may have chosen one for their own reading.
SHELLING = ["default", "Sph2pipeSubprocessBackend", "FfmpegSubprocessOpusBackend"]


@pytest.mark.parametrize("backend", SHELLING)
def test_no_audio_file_name_reaches_a_shell_whatever_its_extension(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clip = write_wav(tmp_path / "clip.wav")
    named = []
    for number, extension in enumerate(audio_extensions()):
        # WAV bytes under each name: a reader that sniffs the bytes decodes them.
        for trap in (f"u{number};touch MARK;", f"u{number}$(touch MARK)`touch MARK`"):
            path = tmp_path / f"{trap}{extension}"
            path.write_bytes(clip.read_bytes())
            recording = lhotse.Recording.from_file(clip, recording_id=f"r{len(named)}")
            recording.sources[0].source = str(path)
            named.append(mono(f"c{len(named)}", recording))
    manifest = tmp_path / "cuts.jsonl.gz"
    lhotse.CutSet.from_cuts(named).to_file(manifest)
    cuts = LhotseCuts(manifest)
    monkeypatch.chdir(tmp_path)  # a command run with these names would touch MARK here
    failed = []
    with lhotse.audio_backend(backend):
        for index in range(len(cuts)):
            try:
                samples = cuts[index]["audio"]["array"]
            except Exception as exc:  # a reader that needs a path fails on bytes: never runs
                failed.append(f"cut {index}: {exc!r:.200}")
                continue
            assert samples.shape == (1600,) and not samples.any()
    assert not (tmp_path / "MARK").exists()
    assert failed == [] if backend == "default" else len(failed) == len(named)
    if backend == "default":
        # What reads the audio is the data layer, whatever the engine: the cheaper one decodes.
        run = [
            "run",
            str(CONFIG_PATH),
            f"data.lhotse={manifest}",
            "decoder.engine=pocketsphinx",
            "parallel.env=inline",
        ]
        assert main(run) == 0 and not (tmp_path / "MARK").exists()
