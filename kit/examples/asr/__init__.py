"""The speech decoding example: :mod:`kit.asr` on speech made with flite and espeak-ng.

``python -m kit.examples.asr`` builds the corpus (if needed) and runs the
decoding check on the local cluster with both engines; ``CONFIG_PATH`` is
its config (``decode.yaml``), ``build_corpus`` speaks its corpus. The
decoding check itself (data, recognizers, scoring, exports) is
:mod:`kit.asr`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit.examples.asr.corpus import build_corpus

__all__ = ["CONFIG_PATH", "build_corpus"]

#: The example's config: the decoding check over the generated corpus.
CONFIG_PATH = Path(__file__).with_name("decode.yaml")


def __getattr__(name: str) -> Any:
    # Imported when first used: the package imports none of its modules, so
    # ``python -m kit.examples.asr.corpus`` runs that module once, without runpy's warning.
    if name != "build_corpus":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.corpus").build_corpus


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
