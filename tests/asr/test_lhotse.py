"""Lhotse CutSet manifests, as icefall and ESPnet's Lhotse recipes write them, decoded by Kit."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.asr.data import LhotseCuts, read_manifest
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
