"""ESPnet3's runner base is :class:`kit.Runner`."""

from kit import Runner as BaseRunner

__all__ = ["BaseRunner"]
