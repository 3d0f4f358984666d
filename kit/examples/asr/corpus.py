"""Build a small spoken corpus on this machine with espeak-ng (text to speech).

Nothing is downloaded: Debian's ``espeak-ng`` speaks each sentence and
``sox`` turns it into 16 kHz, 16-bit mono WAV. The result is two JSON-lines
manifests (``sentences.jsonl``, ``digits.jsonl``) with one ``{"id", "audio",
"text"}`` per utterance: the same format you can point at your own
recordings. ``python -m kit.examples.asr.corpus OUT_DIR`` builds it.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "she sells sea shells by the sea shore",
    "a stitch in time saves nine",
    "the early bird catches the worm",
    "all that glitters is not gold",
    "actions speak louder than words",
    "practice makes perfect",
    "the weather is nice today",
    "please turn off the lights",
    "where is the nearest train station",
    "i would like a cup of coffee",
    "the meeting starts at ten",
    "we need more time to finish",
    "open the window please",
    "the cat sat on the mat",
    "my phone number has changed",
    "it is raining in the city",
    "he reads a book every week",
    "the children play in the park",
    "thank you very much for your help",
    "the river flows to the sea",
    "turn left at the next corner",
    "the music is too loud",
    "can you hear me now",
    "the store closes at nine",
    "she plays the piano well",
    "the train is late again",
    "we will meet tomorrow morning",
    "the dog barks at night",
    "good morning everyone",
]
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
VOICE = ("-v", "en-us", "-s", "130")


def digit_strings(n: int, seed: int = 7) -> list[str]:
    """Return ``n`` digit strings of 3 to 6 digits, the same for the same seed.

    Examples
    --------
    >>> digit_strings(2)
    ['two six zero one eight', 'five nine zero']
    """
    rng = random.Random(seed)
    return [" ".join(rng.choice(DIGIT_WORDS) for _ in range(rng.randint(3, 6))) for _ in range(n)]


def require_tools() -> None:
    """Raise a clear error when espeak-ng or sox is missing."""
    missing = [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(
            f"building the spoken corpus needs {' and '.join(missing)}: "
            "apt-get install espeak-ng sox (make demo and make test do it as root)"
        )


def synthesize(text: str, path: Path) -> None:
    """Speak ``text`` into ``path`` as 16 kHz, 16-bit mono WAV."""
    raw = path.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", *VOICE, "-w", str(raw), text], check=True, capture_output=True)
    subprocess.run(
        ["sox", "-R", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(path)],
        check=True,
        capture_output=True,
    )
    raw.unlink()


def write_set(folder: Path, name: str, texts: Sequence[str]) -> Path:
    """Synthesize ``texts`` under ``folder/name/`` and write ``folder/name.jsonl``."""
    audio_dir = folder / name
    audio_dir.mkdir(parents=True, exist_ok=True)
    manifest = folder / f"{name}.jsonl"
    lines = []
    for i, text in enumerate(texts):
        utt = f"{name}-{i:03d}"
        wav = audio_dir / f"{utt}.wav"
        label = audio_dir / f"{utt}.txt"
        if not (wav.exists() and label.exists() and label.read_text() == text):
            synthesize(text, wav)
            label.write_text(text)
        lines.append(json.dumps({"id": utt, "audio": f"{name}/{utt}.wav", "text": text}))
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def build_corpus(folder: str | Path, n_sentences: int = 30, n_digits: int = 70) -> dict[str, Path]:
    """Build (or reuse) the corpus in ``folder``; return the manifests by set name."""
    require_tools()
    out = Path(folder)
    return {
        "sentences": write_set(out, "sentences", SENTENCES[:n_sentences]),
        "digits": write_set(out, "digits", digit_strings(n_digits)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Build the corpus in the folder given (default ``runs/asr-data``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    manifests = build_corpus(args[0] if args else "runs/asr-data")
    for name, path in manifests.items():
        count = len(path.read_text().splitlines())
        print(f"{name}: {count} utterances in {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
