"""ESPnet3 keeps the parallel config in this module's global; Kit has no such global.

A run's ``parallel`` comes from its config (or the client it is given), so
nothing reads ``parallel_config``: it exists because ESPnet3's tests reset it
before each test.
"""

from typing import Any

parallel_config: Any = None


def set_parallel(config: Any) -> None:
    """Do nothing: Kit reads ``parallel`` from each run's config."""
