"""The engine: one run's handle and driver, its ledger, and the dispatchers of its chunks.

The path of a run, from the user's call to ``forward`` and back:

=============================  ========================  =========================================
function                       module                    what it does
=============================  ========================  =========================================
``Runner.run``                 :mod:`kit.runner`         makes a :class:`~kit.launch.RunRequest`
``run``                        :mod:`kit.launch`         assembles the handle from it, starts it
``RunHandle.drive``            :mod:`kit._engine.run`    publishes the result or exception
``Run.execute``                :mod:`kit._engine.run`    session, env, store, dispatch, conclude
``DaskDispatcher.run``         :mod:`kit._engine.dask`   asks the policy for each turn's ``Turn``
``DaskDispatcher._carry_out``  :mod:`kit._engine.dask`   sends, sends again, alone or as backups
``launch_many``                :mod:`kit._engine.dask`   ``client.map`` of ``run_chunk``, 64 a call
``run_chunk``                  :mod:`kit._engine.task`   on a worker: takes its env
``execute_chunk``              :mod:`kit._engine.chunk`  calls ``forward`` on each item or batch
=============================  ========================  =========================================

And back: the chunk's future wakes ``DaskDispatcher.run``, which gathers the
chunks that came back and hands them to ``Run.complete`` (stored in one
commit, accepted once by the :class:`~kit._engine.ledger.Ledger`, told as
``ChunkFinished``); ``Run.execute`` ends in ``Run._conclude`` (``result.json``,
``RunFinished``), and ``RunHandle.drive`` publishes. Inline runs take
:class:`~kit._engine.inline.InlineDispatcher` in place of the Dask one and
call ``execute_chunk`` themselves. The engine calls up into the runner only
through the spec's ``summarize``, and a dispatcher up into its run only
through the ``complete`` and ``should_stop`` callables it is given.
"""

from kit._engine.run import RunHandle
from kit._engine.spec import ChunkJob, RunSpec

__all__ = ["ChunkJob", "RunHandle", "RunSpec"]
