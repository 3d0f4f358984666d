"""The nanny of Kit's local workers: Dask's own, without its malloc trim threshold."""

from __future__ import annotations

import os
from typing import Any

from distributed import Nanny

#: Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` so freed memory
#: goes back to the system sooner. Setting it also turns off glibc's dynamic mmap
#: threshold, so every allocation above 128 KiB becomes a fresh mmap and page faults:
#: per-item arrays (Whisper's 1 MB feature windows) then cost that on every item.
#: Measured here: Whisper decoding 22% slower in processes started with it.
TRIM = "MALLOC_TRIM_THRESHOLD_"


class KitNanny(Nanny):
    """A ``distributed.Nanny`` that leaves glibc's malloc defaults to its worker.

    A ``MALLOC_TRIM_THRESHOLD_`` in the environment is kept: whoever set it chose it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if TRIM not in os.environ:
            self.pre_spawn_env.pop(TRIM, None)
            self.env.pop(TRIM, None)
