"""The decoding check: a recognizer per worker decodes utterances; WER per item and corpus.

``decoder.engine`` chooses the recognizer (see :mod:`kit.examples.asr.recognizers`):
``whisper`` (Whisper tiny.en through CTranslate2, shipped by a PyPI package)
or ``pocketsphinx`` (``decoder.mode``: ``lm`` or a digits ``grammar``).
Nothing is downloaded. WER uses Whisper's English normalisation
(:mod:`kit.examples.asr.wer`).
"""

from __future__ import annotations

import functools
import json
import time
import wave
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import OmegaConf

from kit import EnvironmentProvider, Runner
from kit.config._errors import error
from kit.examples.asr.recognizers import (
    ENV_DECODER_KEYS,
    DecoderConfig,
    Recognizer,
    make_recognizer,
)
from kit.examples.asr.wer import corpus_cer, corpus_wer, normalizer, score


def read_manifest(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSON-lines manifest of ``{"id", "audio", "text"}``; audio paths become absolute.

    Relative audio paths are relative to the manifest. Errors name the file,
    the line and what to fix.
    """
    manifest = Path(path)
    if not manifest.is_file():
        raise FileNotFoundError(
            f"data.manifest: no such file: {manifest}; build the corpus with "
            "`python -m kit.examples.asr.corpus runs/asr-data` or point it at your own"
        )
    entries = []
    for number, line in enumerate(manifest.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{manifest}, line {number}: not valid JSON ({exc.msg})") from None
        missing = [key for key in ("id", "audio", "text") if key not in entry]
        if missing:
            raise ValueError(
                f"{manifest}, line {number}: missing {', '.join(missing)}; "
                'each line needs {"id": ..., "audio": "path.wav", "text": ...}'
            )
        audio = Path(entry["audio"])
        entry["audio"] = str(audio if audio.is_absolute() else manifest.parent / audio)
        entries.append(entry)
    return entries


def read_wav(path: str) -> tuple[bytes, float]:
    """Return the 16-bit PCM frames of a 16 kHz mono WAV file and its duration in seconds."""
    with wave.open(path) as wav:
        if wav.getframerate() != 16000 or wav.getnchannels() != 1 or wav.getsampwidth() != 2:
            raise ValueError(
                f"{path}: need 16 kHz 16-bit mono WAV, got {wav.getframerate()} Hz, "
                f"{wav.getnchannels()} channel(s), {8 * wav.getsampwidth()}-bit; convert with "
                "`sox in.wav -r 16000 -c 1 -b 16 out.wav`"
            )
        frames = wav.readframes(wav.getnframes())
        return frames, wav.getnframes() / wav.getframerate()


def audio_pcm(audio: Any) -> tuple[bytes, float]:
    """Return 16-bit PCM and duration for a WAV path or a decoded ``{"array", "sampling_rate"}``.

    The second form is what a Hugging Face ``datasets`` Audio column holds.

    Examples
    --------
    >>> pcm, seconds = audio_pcm({"array": [0.0, 0.5, -0.5, 1.0], "sampling_rate": 16000})
    >>> len(pcm), seconds
    (8, 0.00025)
    """
    if isinstance(audio, (str, Path)):
        return read_wav(str(audio))
    if isinstance(audio, dict) and "array" in audio:
        rate = audio.get("sampling_rate", 16000)
        if rate != 16000:
            raise ValueError(f"audio at {rate} Hz: resample it to 16 kHz (datasets: cast_column)")
        import array

        samples = array.array(
            "h", (max(-32768, min(32767, round(x * 32767))) for x in audio["array"])
        )
        return samples.tobytes(), len(samples) / 16000
    raise TypeError(f"audio must be a WAV path or {{'array', 'sampling_rate'}}, got {audio!r:.80}")


def load_dataset_entries(data: dict[str, Any]) -> Any:
    """Return the utterances: a manifest's entries, or a Hugging Face dataset saved to disk."""
    hf = data.get("hf")
    if hf:
        try:
            import datasets
        except ImportError:
            raise ImportError(
                "data.hf needs the Hugging Face datasets package: pip install datasets"
            ) from None
        loaded = datasets.load_from_disk(hf["path"])
        return loaded[hf["split"]] if hf.get("split") else loaded
    return read_manifest(data["manifest"])


def build_env(cfg: dict[str, Any]) -> dict[str, Any]:
    """Build the env: the recognizer the ``decoder`` section asks for, and the dataset."""
    return {
        "recognizer": make_recognizer(cfg.get("decoder") or {}),
        "dataset": load_dataset_entries(cfg["data"]),
    }


class DecodeProvider(EnvironmentProvider):
    """One recognizer (Whisper: about 0.4 s to load) and the dataset, per worker.

    The env depends on the data and the recognizer's own settings, not on
    ``decoder.beam_size``, which ``forward`` reads from each run's config: runs
    (a sweep's trials) differing only in beam size share one loaded model.
    """

    config_schemas: ClassVar[Mapping[str, type]] = {"decoder": DecoderConfig}
    env_keys: ClassVar[Sequence[str]] = (
        "data",
        *(f"decoder.{name}" for name in ENV_DECODER_KEYS),
    )

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        # A mistyped normaliser is a config error now, not a failure of every item.
        chosen = OmegaConf.select(self.config, "scoring.normalizer")
        if chosen is not None:
            try:
                normalizer(str(chosen))
            except ValueError as exc:
                raise error(
                    str(exc).split(": ", 1)[1],
                    full_key="scoring.normalizer",
                    value=chosen,
                    show_value=True,
                ) from None

    def _plain(self) -> dict[str, Any]:
        plain = OmegaConf.to_container(self.config, resolve=True)
        assert isinstance(plain, dict)
        return {str(k): v for k, v in plain.items()}

    def build_env_local(self) -> dict[str, Any]:
        """Build the env in this process (inline runs)."""
        return build_env(self._plain())

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        """Return the function each worker runs once."""
        # A plain dict: cheap to ship, no DictConfig on the workers.
        return functools.partial(build_env, self._plain())


def decode_items(
    indices: list[int],
    recognizer: Recognizer,
    dataset: Any,
    beam_size: int | None = None,
    normalize_with: str = "whisper",
) -> list[dict[str, Any]]:
    """Decode the utterances ``indices`` of the dataset in one recognizer call; score each."""
    entries = [dataset[i] for i in indices]
    audio = [audio_pcm(entry["audio"]) for entry in entries]
    began = time.perf_counter()
    hyps = recognizer.decode([pcm for pcm, _ in audio], beam_size=beam_size)
    # A batch's decoding time is shared by its utterances in proportion to their length.
    seconds = time.perf_counter() - began
    total = sum(duration for _, duration in audio) or 1.0
    records = []
    for idx, entry, (_, duration), hyp in zip(indices, entries, audio, hyps, strict=True):
        scored = score(entry["text"], hyp, normalize_with)
        share = seconds * duration / total
        records.append(
            {
                "id": entry.get("id", str(idx)),
                "speaker": entry.get("speaker"),
                "ref": entry["text"],
                "hyp": hyp,
                **scored,
                "duration": round(duration, 3),
                "metrics": {
                    "wer": scored["errors"] / max(1, scored["words"]),
                    "cer": scored["char_errors"] / max(1, scored["chars"]),
                    "rtf": share / duration if duration else 0.0,
                },
                "decode_seconds": share,
            }
        )
    return records


class DecodeRunner(Runner):
    """Decode utterances: raw and normalised text, word errors, WER and real-time factor.

    With ``batch_size`` set, or ``batch_by: duration`` and ``max_batch`` (seconds
    of audio per batch), ``forward`` gets a list of indices and the recognizer
    decodes them in one call (Whisper as one batch).
    """

    @staticmethod
    def forward(idx: Any, recognizer: Recognizer, dataset: Any, config: Any = None) -> Any:
        """Decode utterance ``idx`` (or the list of utterances ``idx``) of the dataset.

        The beam size (``config.decoder.beam_size``) and the text normaliser
        (``config.scoring.normalizer``) are the run's, not the env's.
        """
        beam = OmegaConf.select(config, "decoder.beam_size") if config is not None else None
        beam_size = None if beam is None else int(beam)
        chosen = OmegaConf.select(config, "scoring.normalizer") if config is not None else None
        norm = "whisper" if chosen is None else str(chosen)
        if isinstance(idx, list):
            return decode_items(idx, recognizer, dataset, beam_size, norm)
        return decode_items([idx], recognizer, dataset, beam_size, norm)[0]

    @staticmethod
    def duration(idx: int, dataset: Any) -> float:
        """Seconds of audio of utterance ``idx``, for ``runner.batch_by: duration``.

        A manifest's ``duration`` field when it has one, else the WAV header
        (or the decoded array's length): the audio itself is not read.
        """
        entry = dataset[idx]
        if entry.get("duration") is not None:
            return float(entry["duration"])
        audio = entry["audio"]
        if isinstance(audio, dict) and "array" in audio:
            return len(audio["array"]) / float(audio.get("sampling_rate", 16000))
        with wave.open(str(audio)) as wav:
            return float(wav.getnframes() / wav.getframerate())

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        """Corpus WER and CER, with their substitutions, deletions and insertions; the RTF."""
        done = [r for r in records if r is not None]
        if not done:
            return {}
        audio = sum(r["duration"] for r in done)
        spent = sum(r["decode_seconds"] for r in done)
        return {
            **corpus_wer(done),
            **corpus_cer(done),
            "rtf": round(spent / audio, 4) if audio else 0.0,
            "utterances": len(done),
        }


CONFIG_PATH = Path(__file__).with_name("decode.yaml")
