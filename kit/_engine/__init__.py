"""The engine: one run's handle and driver, its ledger, and the dispatchers of its chunks.

The path of a run, from the user's call to ``forward`` and back:

======================  ========================  ==============================================
function                module                    what it does
======================  ========================  ==============================================
``Runner.run``          :mod:`kit.runner`         makes a :class:`~kit.launch.RunRequest`
``run``                 :mod:`kit.launch`         assembles the handle from it, starts it
``RunHandle.start``     :mod:`kit._engine.run`    a thread of the run's own, for ``Run.drive``
``Run.drive``           :mod:`kit._engine.run`    session, env, store, dispatch, conclude
``DaskDispatcher.run``  :mod:`kit._engine.dask`   carries out each ``Turn`` the policy returns
``launch_many``         :mod:`kit._engine.dask`   ``client.map`` of ``run_chunk``, 64 a call
``run_chunk``           :mod:`kit._engine.task`   on a worker: takes its env
``execute_chunk``       :mod:`kit._engine.chunk`  calls ``forward`` on each item or batch
======================  ========================  ==============================================

And back: the chunk's future wakes ``DaskDispatcher.run``, which gathers the
chunks that came back and hands them to ``ChunkIntake.complete`` (stored in
one commit, accepted once by the :class:`~kit._engine.ledger.Ledger`, told
as ``ChunkFinished``); ``Run.drive`` ends in ``Run._conclude``
(``result.json``, ``RunFinished``) and gives the handle the result to
publish. An inline run is driven on the caller's thread (``RunHandle.drive``
in place of ``start``) and takes :class:`~kit._engine.inline.InlineDispatcher`
in place of the Dask one, which calls ``execute_chunk`` itself. The engine
calls up into the runner only through the spec's ``summarize``, and a
dispatcher up into its run only through the ``complete`` and
``should_stop`` callables it is given.
"""

from kit._engine.run import RunHandle
from kit._engine.spec import ChunkJob, RunSpec

__all__ = ["ChunkJob", "RunHandle", "RunSpec"]
