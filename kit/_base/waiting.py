"""How often Kit's waits look up: for a cancel, a finished run, a driver's news."""

from __future__ import annotations

#: Seconds between looks while waiting: short enough for Ctrl-C and cancel to feel
#: immediate, long enough that a wait costs nothing.
WAIT_STEP = 0.2
