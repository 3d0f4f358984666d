"""The spoken corpus the decoding tests share: flite and espeak-ng voices, built once a session."""

from __future__ import annotations

import os
import shutil
import wave
from pathlib import Path

import pytest

from kit.examples.asr import build_corpus

SENTENCES, DIGITS = 12, 8  # per voice: 5 voices x 20 = 100 utterances in corpus.jsonl


def build_shared_corpus(folder: Path) -> None:
    """Build the corpus into ``folder``, or skip (fail in CI) naming the tools that are missing."""
    missing = [tool for tool in ("flite", "espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} must be installed in CI (.ci/system-deps.sh)")
        pytest.skip(f"{', '.join(missing)} missing (apt-get install flite espeak-ng sox)")
    build_corpus(folder, n_sentences=SENTENCES, n_digits=DIGITS)


def shout(text: str) -> str:
    """A normaliser of one's own, named by its dotted path: upper case, words kept."""
    return " ".join(text.upper().split())


def write_wav(path: Path, rate: int = 16000, channels: int = 1, seconds: float = 0.1) -> Path:
    """Write a silent 16-bit WAV file of the given rate and channels; return its path."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(2 * channels * round(rate * seconds)))
    return path
