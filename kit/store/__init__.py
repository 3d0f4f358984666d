"""The run folder: what a run writes, and how any process reads or resumes it.

One wing holds the folder's names (:class:`RunDir`, :class:`SweepDir`), the
record formats (:class:`RecordWriter`), the manifest and resume checks and
the commit of chunks (:class:`RunStore`), and reading a finished folder back.
The layout is drawn in ``kit/store/_store.py`` and in docs/output.md.

Examples
--------
>>> from kit.store import RunDir
>>> RunDir("runs/demo").result.name
'result.json'
"""

from kit.store._rundir import RunDir, SweepDir
from kit.store._store import RecordWriter, RunStore, StoreError, StoreWarning

__all__ = ["RecordWriter", "RunDir", "RunStore", "StoreError", "StoreWarning", "SweepDir"]
