"""The speech decoding example: PocketSphinx on speech made with espeak-ng.

``python -m kit.examples.asr`` builds the corpus (if needed) and runs the
decoding check on the local cluster in both decoder modes.
"""

from kit.examples.asr.corpus import build_corpus
from kit.examples.asr.decode import DecodeProvider, DecodeRunner, read_manifest

__all__ = ["DecodeProvider", "DecodeRunner", "build_corpus", "read_manifest"]
