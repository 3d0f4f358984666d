"""16 kHz 16-bit mono WAV, as the recognizers take it: from a file or from bytes in memory."""

from __future__ import annotations

import wave
from typing import BinaryIO

from kit.config._errors import error


def wav_pcm(source: str | BinaryIO, name: str) -> tuple[bytes, float]:
    """Return the PCM frames and seconds of a 16 kHz 16-bit mono WAV: a path or bytes in a file.

    ``name`` says which in an error (a path, or a dataset row's).
    """
    with wave.open(source) as wav:
        if wav.getframerate() != 16000 or wav.getnchannels() != 1 or wav.getsampwidth() != 2:
            raise error(
                f"{name}: need 16 kHz 16-bit mono WAV, got {wav.getframerate()} Hz, "
                f"{wav.getnchannels()} channel(s), {8 * wav.getsampwidth()}-bit; convert with "
                "`sox in.wav -r 16000 -c 1 -b 16 out.wav`"
            )
        frames = wav.readframes(wav.getnframes())
        return frames, wav.getnframes() / wav.getframerate()
