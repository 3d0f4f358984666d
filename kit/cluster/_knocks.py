"""A knock on a Kit local cluster's port by a process without its credentials: refused, quietly.

Kit's local clusters speak TLS with credentials made for them alone (see
:func:`kit.cluster._builders.local_tls`), so another process on the machine
that connects to one of their ports (a port scan, an old client or worker
dialing an address the kernel has since handed to this cluster) is refused.
distributed then logs a WARNING, "Listener on ...: TLS handshake failed with
remote ...", which would land under the user's cell or in their terminal:
about someone else's process, and nothing the user can act on. The side that
knocked is the one told it was refused.

Installed in the process that holds the cluster's scheduler and nannies (see
``quiet_distributed``) and, as a Dask preload, in each worker's process.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

#: The logger and the words of the refused handshake's WARNING.
KNOCK_LOG, KNOCK_WORDS = "distributed.comm.tcp", "TLS handshake failed"

#: This module, as a Dask preload: its :func:`dask_setup` runs in each worker's process.
PRELOAD = __name__


class RefusedKnocks(logging.Filter):
    """Drop distributed's WARNING for a TLS handshake a listener refused.

    Examples
    --------
    >>> record = logging.makeLogRecord({
    ...     "msg": "Listener on %r: TLS handshake failed with remote %r: %s",
    ...     "args": ("tls://127.0.0.1:35529", "tls://127.0.0.1:41956", "EOF")})
    >>> RefusedKnocks().filter(record)
    False
    >>> RefusedKnocks().filter(logging.makeLogRecord({"msg": "Closing Nanny at ..."}))
    True
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return KNOCK_WORDS not in record.getMessage()


def quiet_knocks() -> None:
    """Drop :class:`RefusedKnocks` in this process (once, however often called).

    Examples
    --------
    >>> quiet_knocks(); quiet_knocks()
    >>> sum(isinstance(f, RefusedKnocks) for f in logging.getLogger(KNOCK_LOG).filters)
    1
    """
    logger = logging.getLogger(KNOCK_LOG)
    if not any(isinstance(f, RefusedKnocks) for f in logger.filters):
        logger.addFilter(RefusedKnocks())


#: Set to 1 in a nanny's environment, its workers ignore Ctrl-C (a class cluster's,
#: whose command takes it and closes them in order; see kit.cluster._class_cluster).
DEAF = "KIT_WORKERS_IGNORE_SIGINT"


def dask_setup(worker: Any) -> None:
    """Quiet the knocks in a worker's process (distributed calls it as the worker starts)."""
    quiet_knocks()
    if os.environ.get(DEAF) == "1":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
