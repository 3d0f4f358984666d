"""The speech decoding example: Whisper and PocketSphinx on speech made with flite and espeak-ng.

``python -m kit.examples.asr`` builds the corpus (if needed) and runs the
decoding check on the local cluster with both engines.
"""

from kit.examples.asr.corpus import build_corpus
from kit.examples.asr.decode import DecodeProvider, DecodeRunner, read_manifest
from kit.examples.asr.wer import differences

__all__ = ["DecodeProvider", "DecodeRunner", "build_corpus", "differences", "read_manifest"]
