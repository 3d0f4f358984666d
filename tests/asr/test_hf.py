"""Hugging Face datasets saved to disk (``data.hf``): audio is data Kit reads, never fetched."""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.asr.data import audio_pcm, load_dataset_entries, read_manifest, read_wav
from kit.cli import EXIT_USAGE, main
from kit.examples.asr import CONFIG_PATH
from tests.asr.test_kaldi import PICKS, decode

datasets = pytest.importorskip("datasets")
soundfile = pytest.importorskip("soundfile")
pytest.importorskip("pocketsphinx")

#: `kit run` of the example decoding config on one item, in this process.
RUN = ["run", str(CONFIG_PATH), "items.stop=1", "parallel.env=inline"]


def flac(wav: str) -> bytes:
    """The WAV file's samples as FLAC bytes, as many datasets on the Hub store them."""
    samples, rate = soundfile.read(wav, dtype="int16")
    out = io.BytesIO()
    soundfile.write(out, samples, rate, format="FLAC")
    return out.getvalue()


def saved(rows: list[dict[str, object]], folder: Path, audio_type: bool = True) -> Path:
    """Save ``rows`` with save_to_disk; their ``audio`` column an Audio feature, as the Hub's are.

    The feature is written into the saved folder's description, as a co-user who can write
    the folder could: saving an Audio column whose path is a URL would fetch it here.
    """
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    if audio_type:
        info = folder / "dataset_info.json"
        described = json.loads(info.read_text())
        described["features"]["audio"] = {"_type": "Audio"}
        info.write_text(json.dumps(described))
    return folder


@contextlib.contextmanager
def listener() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that serves nothing and notes each request's path."""
    asked: list[str] = []

    class Note(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_error(404)

        do_HEAD = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Note)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_saved_dataset_decodes_as_the_same_utterances_from_a_manifest(
    corpus: Path, tmp_path: Path
) -> None:
    entries = [read_manifest(corpus / "corpus.jsonl")[i] for i in PICKS]
    rows = []
    for position, entry in enumerate(entries):
        wav = str(entry["audio"])
        # WAV bytes, FLAC bytes, and a row holding only its local file's path.
        stored = [Path(wav).read_bytes(), flac(wav), None][position % 3]
        rows.append(
            {"id": entry["id"], "audio": {"bytes": stored, "path": wav}, "text": entry["text"]}
        )
    folder = saved(rows, tmp_path / "hf")
    loaded = load_dataset_entries({"hf": {"path": str(folder)}})
    assert [audio_pcm(row["audio"]) for row in loaded] == [
        read_wav(str(e["audio"])) for e in entries
    ]
    from_hf = decode(corpus, tmp_path / "h", f"data.hf={{path: {folder}}}", items=range(len(PICKS)))
    from_manifest = decode(corpus, tmp_path / "m", items=PICKS)
    assert not from_hf.errors
    assert [r["id"] for r in from_hf.records] == [e["id"] for e in entries]
    assert [r["hyp"] for r in from_hf.records] == [r["hyp"] for r in from_manifest.records]


def test_a_row_whose_audio_is_a_url_is_refused_naming_it_and_nothing_is_fetched(
    corpus: Path, tmp_path: Path
) -> None:
    wav = str(read_manifest(corpus / "corpus.jsonl")[0]["audio"])
    with listener() as (address, asked):
        rows = [
            {"id": "u1", "audio": {"bytes": Path(wav).read_bytes(), "path": wav}, "text": "a"},
            {"id": "u2", "audio": {"bytes": None, "path": f"{address}/u2.wav"}, "text": "b"},
        ]
        folder = saved(rows, tmp_path / "hf")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main([*RUN, f"data.hf={{path: {folder}}}", f"output_dir={tmp_path / 'out'}"])
    assert code == EXIT_USAGE
    assert err.getvalue() == (
        f"kit: error: data.hf: {folder}, row 1 (u2): its audio is '{address}/u2.wav', not a "
        "local file; Kit reads local files and audio stored in the dataset only\n"
        "    full_key: data.hf\n"
        "    fix: download the audio and store it in the dataset (or give its local path)\n"
    )
    assert asked == []


def test_a_dataset_that_is_not_on_this_machine_is_refused(tmp_path: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([*RUN, "data.hf={path: 's3://bucket/set'}", f"output_dir={tmp_path / 'out'}"])
    assert code == EXIT_USAGE
    assert "data.hf.path: s3://bucket/set is not a folder on this machine" in err.getvalue()
