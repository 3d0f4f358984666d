"""The engine: a run's handle, its ledger, and the dispatchers that run its chunks.

- :mod:`kit._engine.handle`: :class:`RunHandle`, the future users hold.
- :mod:`kit._engine.run`: one run's phases, from session start to ``RunFinished``.
- :mod:`kit._engine.ledger`: exactly-once acceptance, counters, the stop policy.
- :mod:`kit._engine.inline`, :mod:`kit._engine.dask`: where chunks execute.
"""

from kit._engine.handle import RunHandle
from kit._engine.spec import ChunkJob, RunSpec

__all__ = ["ChunkJob", "RunHandle", "RunSpec"]
