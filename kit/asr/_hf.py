"""A Hugging Face dataset saved to disk (``data.hf``), read as data: its audio is Kit's to decode.

``datasets`` decodes an ``Audio`` column itself when a row is read: a path
that is a URL is fetched (fsspec), and since datasets 4 the decoding needs
torchcodec. Kit casts the column to ``Audio(decode=False)`` and reads each
row's ``bytes`` in memory, or its ``path`` as a local file; a path that is
not local is refused when the dataset is loaded, naming the row and its id.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from kit._base.extras import install
from kit.asr._wav import wav_pcm
from kit.config._errors import error

RATE = 16000


def remote(path: str) -> bool:
    """Whether ``path`` names something other than a local file (a URL, a pipe).

    >>> remote("https://example.org/a.wav"), remote("pipe:sox a.flac -t wav -"), remote("a.wav")
    (True, True, False)
    """
    return "://" in path or path.startswith(("pipe:", "|")) or path.rstrip().endswith("|")


def read_hf(hf: Mapping[str, Any]) -> Any:
    """Load the dataset ``hf`` names (``{path, split?}``), its audio left for Kit to read."""
    try:
        import datasets
    except ImportError:
        raise ImportError(
            f"data.hf needs the Hugging Face datasets package: {install('hf')}"
        ) from None
    where = str(hf["path"])
    if remote(where):
        raise error(
            f"{where} is not a folder on this machine",
            full_key="data.hf.path",
            fix="save the dataset here (Dataset.save_to_disk) and give that folder",
        )
    loaded = datasets.load_from_disk(where)
    if hf.get("split"):
        loaded = loaded[hf["split"]]
    if isinstance(loaded.features.get("audio"), datasets.Audio):
        loaded = loaded.cast_column("audio", datasets.Audio(decode=False))
    _refuse_remote_audio(loaded, where)
    return loaded


def _refuse_remote_audio(loaded: Any, where: str) -> None:
    """Refuse a row whose audio is neither bytes nor a local file, naming it."""
    if "audio" not in loaded.column_names:
        return
    column = loaded.data.column("audio").combine_chunks()
    if not hasattr(column, "field") or column.type.get_field_index("path") < 0:
        return  # arrays or paths as plain values: read as a manifest's are
    paths = column.field("path").to_pylist()
    stored = (
        column.field("bytes").to_pylist() if column.type.get_field_index("bytes") >= 0 else None
    )
    ids = loaded.data.column("id") if "id" in loaded.column_names else None
    for row, path in enumerate(paths):
        if path and remote(path) and (stored is None or stored[row] is None):
            name = f" ({ids[row].as_py()})" if ids is not None else ""
            raise error(
                f"{where}, row {row}{name}: its audio is {path!r}, not a local file; Kit reads "
                "local files and audio stored in the dataset only",
                full_key="data.hf",
                fix="download the audio and store it in the dataset (or give its local path)",
            )


def stored_pcm(audio: Mapping[str, Any]) -> tuple[bytes, float] | None:
    """Return the PCM of an undecoded row's ``bytes`` (None if it holds only a path).

    WAV is read with the standard library; other formats (FLAC, Ogg) with
    soundfile. Either way 16 kHz mono is needed, as for a WAV file.

    >>> import io, wave
    >>> buffer = io.BytesIO()
    >>> with wave.open(buffer, "wb") as out:
    ...     out.setnchannels(1); out.setsampwidth(2); out.setframerate(16000)
    ...     out.writeframes(bytes(3200))
    >>> pcm, seconds = stored_pcm({"bytes": buffer.getvalue(), "path": "u1.wav"})
    >>> len(pcm), seconds
    (3200, 0.1)
    """
    data = audio.get("bytes")
    if data is None:
        return None
    name = audio.get("path") or "the row's audio bytes"
    if bytes(data[:4]) == b"RIFF":
        return wav_pcm(io.BytesIO(data), name)
    try:
        import soundfile
    except ImportError:
        raise ImportError(
            f"{name}: audio other than WAV needs soundfile: {install('hf')}"
        ) from None
    samples, rate = soundfile.read(io.BytesIO(data), dtype="int16", always_2d=True)
    if rate != RATE or samples.shape[1] != 1:
        raise error(f"{name}: need 16 kHz mono audio, got {rate} Hz, {samples.shape[1]} channel(s)")
    return samples[:, 0].astype("<i2").tobytes(), len(samples) / RATE
