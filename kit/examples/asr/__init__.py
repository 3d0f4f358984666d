"""The speech decoding example: Whisper and PocketSphinx on speech made with flite and espeak-ng.

``python -m kit.examples.asr`` builds the corpus (if needed) and runs the
decoding check on the local cluster with both engines.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit.examples.asr.corpus import build_corpus
    from kit.examples.asr.data import read_manifest
    from kit.examples.asr.decode import DecodeProvider, DecodeRunner
    from kit.examples.asr.wer import differences

__all__ = ["DecodeProvider", "DecodeRunner", "build_corpus", "differences", "read_manifest"]

# Imported when first used: the package imports none of its modules, so
# ``python -m kit.examples.asr.corpus`` runs that module once, without runpy's warning.
_WHERE = {
    "build_corpus": "corpus",
    "DecodeProvider": "decode",
    "DecodeRunner": "decode",
    "read_manifest": "data",
    "differences": "wer",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
