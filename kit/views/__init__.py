"""Views of a run's event stream (headless ones; notebook views live in ``widgets``)."""

from kit.views.terminal import TerminalProgress

__all__ = ["TerminalProgress"]
