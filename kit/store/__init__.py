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

from kit._base.deprecated import moved as _moved
from kit.store._formats import RecordWriter
from kit.store._rundir import RunDir, SweepDir
from kit.store._store import RunStore

__all__ = ["RecordWriter", "RunDir", "RunStore", "SweepDir"]

#: Names the kit.store module gave before it was a package: errors are in kit.errors.
__getattr__ = _moved(__name__, {"StoreError": "kit.errors", "StoreWarning": "kit.errors"})
