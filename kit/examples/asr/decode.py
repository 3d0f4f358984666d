"""The decoding check: PocketSphinx decodes utterances, one decoder per worker.

PocketSphinx (PyPI ``pocketsphinx``) ships its en-US acoustic model,
dictionary and language model, so nothing is downloaded. ``decoder.mode``
chooses the search: ``lm`` (the general language model, for any sentence)
or ``grammar`` (a JSGF grammar of digit strings).
"""

from __future__ import annotations

import json
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit import EnvironmentProvider, Runner
from kit.config import ConfigError
from kit.config._errors import closest

MODES = ("lm", "grammar")
DIGITS_JSGF = (
    "#JSGF V1.0; grammar digits; public <digits> = "
    "( zero | one | two | three | four | five | six | seven | eight | nine )+ ;"
)


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


def make_decoder(settings: dict[str, Any]) -> Any:
    """Build a PocketSphinx decoder for ``decoder`` settings (mode, options)."""
    from pocketsphinx import Decoder

    mode = settings.get("mode", "lm")
    if mode not in MODES:
        guess = closest(str(mode), MODES)
        hint = f"; did you mean '{guess}'?" if guess else ""
        raise ConfigError(
            f"decoder.mode: '{mode}' is not a valid choice{hint}\n"
            f"    expected: one of {', '.join(MODES)}\n    full_key: decoder.mode\n"
            f"    fix: set it with `decoder.mode={guess or 'lm'}`",
            full_key="decoder.mode",
        )
    decoder = Decoder(samprate=16000, loglevel="FATAL", **dict(settings.get("options") or {}))
    if mode == "grammar":
        decoder.add_jsgf_string("digits", DIGITS_JSGF)
        decoder.activate_search("digits")
    return decoder


def build_env(cfg: dict[str, Any]) -> dict[str, Any]:
    """Build the env: the decoder and the dataset (the manifest's entries)."""
    return {
        "decoder": make_decoder(cfg["decoder"]),
        "dataset": load_dataset_entries(cfg["data"]),
    }


class DecodeProvider(EnvironmentProvider):
    """One PocketSphinx decoder (about 0.3 s to load) and the dataset, per worker."""

    def _plain(self) -> dict[str, Any]:
        plain = OmegaConf.to_container(self.config, resolve=True)
        assert isinstance(plain, dict)
        return {str(k): v for k, v in plain.items()}

    def build_env_local(self) -> dict[str, Any]:
        """Build the env in this process (inline runs)."""
        return build_env(self._plain())

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        """Return the function each worker runs once."""
        plain = self._plain()  # a plain dict: cheap to ship, no DictConfig on the workers
        return lambda: build_env(plain)


def word_errors(ref: str, hyp: str) -> int:
    """Substitutions, deletions and insertions between two word strings (jiwer)."""
    import jiwer

    if not ref.split():
        return len(hyp.split())
    out = jiwer.process_words(ref, hyp if hyp.split() else "")
    return int(out.substitutions + out.deletions + out.insertions)


class DecodeRunner(Runner):
    """Decode one utterance: hypothesis, reference, duration, word errors, WER and RTF."""

    @staticmethod
    def forward(idx: int, decoder: Any, dataset: list[dict[str, Any]]) -> dict[str, Any]:
        """Decode utterance ``idx`` of the dataset."""
        entry = dataset[idx]
        pcm, duration = audio_pcm(entry["audio"])
        began = time.perf_counter()
        # PocketSphinx's feature front end keeps state from the utterances it saw before;
        # without a reset the same audio decodes differently on a worker that saw other items.
        decoder.reinit_feat()
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        seconds = time.perf_counter() - began
        hyp = decoder.hyp().hypstr if decoder.hyp() is not None else ""
        ref = entry["text"]
        errors = word_errors(ref, hyp)
        words = max(1, len(ref.split()))
        return {
            "id": entry.get("id", str(idx)),
            "ref": ref,
            "hyp": hyp,
            "duration": round(duration, 3),
            "errors": errors,
            "words": len(ref.split()),
            "metrics": {"wer": errors / words, "rtf": seconds / duration if duration else 0.0},
            "decode_seconds": seconds,
        }

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        """Corpus WER (jiwer, over every word) and real-time factor of the decoded items."""
        import jiwer

        done = [r for r in records if r is not None]
        if not done:
            return {}
        wer = jiwer.wer([r["ref"] for r in done], [r["hyp"] for r in done])
        audio = sum(r["duration"] for r in done)
        spent = sum(r["decode_seconds"] for r in done)
        return {
            "wer": round(float(wer), 4),
            "rtf": round(spent / audio, 4),
            "utterances": len(done),
        }


CONFIG_PATH = Path(__file__).with_name("decode.yaml")


def manifest_length(cfg: DictConfig) -> int:
    """Return the number of utterances in ``cfg.data.manifest``."""
    return len(read_manifest(cfg.data.manifest))
