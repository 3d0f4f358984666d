"""Build a small multi-speaker spoken corpus on this machine (text to speech).

Nothing is downloaded: Debian's ``flite`` speaks each text with four voices
(``slt``, ``rms``, ``awb``, ``kal16``) and ``espeak-ng`` with a fifth, more
robotic one (``espeak``); ``sox`` turns everything into 16 kHz, 16-bit mono
WAV. The result is JSON-lines manifests (``sentences.jsonl``,
``digits.jsonl`` and both in ``corpus.jsonl``) with one ``{"id", "audio",
"text", "speaker"}`` per utterance: the same format you can point at your own
recordings (``speaker`` is optional). ``python -m kit.examples.asr.corpus
OUT_DIR`` builds it.
"""

from __future__ import annotations

import argparse
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
#: Speaker name -> the command that speaks a text into a WAV file ({text}, {out}).
VOICES: dict[str, tuple[str, ...]] = {
    "slt": ("flite", "-voice", "slt", "-t", "{text}", "-o", "{out}"),
    "rms": ("flite", "-voice", "rms", "-t", "{text}", "-o", "{out}"),
    "awb": ("flite", "-voice", "awb", "-t", "{text}", "-o", "{out}"),
    "kal16": ("flite", "-voice", "kal16", "-t", "{text}", "-o", "{out}"),
    "espeak": ("espeak-ng", "-v", "en-us", "-s", "130", "-w", "{out}", "{text}"),
}
#: The natural-sounding voices (flite's), as opposed to espeak-ng's robotic one.
FLITE_VOICES = ("slt", "rms", "awb", "kal16")


def digit_strings(n: int, seed: int = 7) -> list[str]:
    """Return ``n`` digit strings of 3 to 6 digits, the same for the same seed.

    Examples
    --------
    >>> digit_strings(2)
    ['two six zero one eight', 'five nine zero']
    """
    rng = random.Random(seed)
    return [" ".join(rng.choice(DIGIT_WORDS) for _ in range(rng.randint(3, 6))) for _ in range(n)]


def require_tools(voices: Sequence[str]) -> None:
    """Raise a clear error when a voice is unknown or a program is missing."""
    unknown = [voice for voice in voices if voice not in VOICES]
    if unknown:
        raise ValueError(f"unknown voice(s) {', '.join(unknown)}; known: {', '.join(VOICES)}")
    needed = dict.fromkeys([*(VOICES[voice][0] for voice in voices), "sox"])
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(
            f"building the spoken corpus needs {' and '.join(missing)}: "
            f"apt-get install {' '.join(missing)} (make demo and make test do it as root)"
        )


def synthesize(text: str, path: Path, voice: str = "slt") -> None:
    """Speak ``text`` with ``voice`` into ``path`` as 16 kHz, 16-bit mono WAV."""
    raw = path.with_suffix(".raw.wav")
    command = [part.format(text=text, out=raw) for part in VOICES[voice]]
    subprocess.run(command, check=True, capture_output=True)
    subprocess.run(
        ["sox", "-R", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(path)],
        check=True,
        capture_output=True,
    )
    raw.unlink()


def write_set(folder: Path, name: str, texts: Sequence[str], voices: Sequence[str]) -> Path:
    """Speak ``texts`` with each voice under ``folder/name/``; write ``folder/name.jsonl``.

    Audio already there for the same text is reused, so a second build is quick.
    """
    audio_dir = folder / name
    audio_dir.mkdir(parents=True, exist_ok=True)
    manifest = folder / f"{name}.jsonl"
    lines = []
    for voice in voices:
        for i, text in enumerate(texts):
            utt = f"{name}-{voice}-{i:03d}"
            wav = audio_dir / f"{utt}.wav"
            label = audio_dir / f"{utt}.txt"
            if not (wav.exists() and label.exists() and label.read_text() == text):
                synthesize(text, wav, voice)
                label.write_text(text)
            entry = {"id": utt, "audio": f"{name}/{utt}.wav", "text": text, "speaker": voice}
            lines.append(json.dumps(entry))
    manifest.write_text("\n".join(lines) + "\n")
    return manifest


def write_kaldi_dir(folder: str | Path, texts: Sequence[str], voices: Sequence[str]) -> Path:
    """Speak ``texts`` with each voice as a Kaldi data directory in ``folder``; return it.

    ``wav.scp`` names ``wav/<voice>-sNN.wav`` (relative to the directory),
    ``text`` and ``utt2spk`` the utterances, sorted by id as Kaldi wants.
    Audio already there for the same text is reused.
    """
    require_tools(voices)
    out = Path(folder)
    (out / "wav").mkdir(parents=True, exist_ok=True)
    scp, text, spk = [], [], []
    for voice in sorted(voices):
        for i, said in enumerate(texts):
            utt = f"{voice}-s{i:02d}"
            wav, label = out / "wav" / f"{utt}.wav", out / "wav" / f"{utt}.txt"
            if not (wav.exists() and label.exists() and label.read_text() == said):
                synthesize(said, wav, voice)
                label.write_text(said)
            scp.append(f"{utt} wav/{utt}.wav")
            text.append(f"{utt} {said}")
            spk.append(f"{utt} {voice}")
    for name, lines in (("wav.scp", scp), ("text", text), ("utt2spk", spk)):
        (out / name).write_text("\n".join(lines) + "\n")
    return out


def build_corpus(
    folder: str | Path,
    n_sentences: int = 30,
    n_digits: int = 20,
    voices: Sequence[str] = tuple(VOICES),
) -> dict[str, Path]:
    """Build (or reuse) the corpus in ``folder``; return the manifests by set name.

    Each voice speaks the same ``n_sentences`` sentences and ``n_digits`` digit
    strings, so the voices can be compared; ``corpus`` lists both sets.
    """
    require_tools(voices)
    out = Path(folder)
    manifests = {
        "sentences": write_set(out, "sentences", SENTENCES[:n_sentences], voices),
        "digits": write_set(out, "digits", digit_strings(n_digits), voices),
    }
    both = out / "corpus.jsonl"
    both.write_text("".join(path.read_text() for path in manifests.values()))
    return {**manifests, "corpus": both}


def main(argv: Sequence[str] | None = None) -> int:
    """Build the corpus in the folder given (default ``runs/asr-data``)."""
    parser = argparse.ArgumentParser(
        prog="python -m kit.examples.asr.corpus",
        description="Speak the decoding check's corpus with flite and espeak-ng (once).",
    )
    parser.add_argument("folder", nargs="?", default="runs/asr-data", help="where to write it")
    parser.add_argument(
        "--kaldi",
        action="store_true",
        help="write a Kaldi data directory instead: six sentences by awb and by rms "
        "(the manual's test_voices)",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.kaldi:
        folder = write_kaldi_dir(args.folder, SENTENCES[:6], ("awb", "rms"))
        print(f"a Kaldi data directory of 12 utterances in {folder}")
        return 0
    manifests = build_corpus(args.folder)
    for name, path in manifests.items():
        count = len(path.read_text().splitlines())
        print(f"{name}: {count} utterances in {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
