"""ESPnet3's inference provider is :class:`kit.asr.InferenceProvider`."""

from kit.asr import InferenceProvider

__all__ = ["InferenceProvider"]
