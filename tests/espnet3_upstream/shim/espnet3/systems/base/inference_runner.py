"""ESPnet3's inference runner is :class:`kit.asr.InferenceRunner`."""

from kit.asr import InferenceRunner
from kit.asr.inference import load_output_fn as _load_output_fn

__all__ = ["InferenceRunner", "_load_output_fn"]
