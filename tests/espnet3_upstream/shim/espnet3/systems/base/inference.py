"""ESPnet3's inference stage is :func:`kit.asr.infer`.

ESPnet3's ``infer`` sets the module-global parallel config through
``set_parallel``; Kit's takes ``parallel`` from the config it is given, so
nothing here calls ``set_parallel``. It exists because ESPnet3's tests patch it.
"""

from typing import Any

from kit.asr import infer


def set_parallel(config: Any) -> None:
    """Do nothing: Kit reads ``parallel`` from each run's config."""


__all__ = ["infer", "set_parallel"]
