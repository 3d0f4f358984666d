"""A run's seat on its cluster, from the driver's side: join, report, read its share, leave.

Every run on a Dask cluster takes a seat in the scheduler's Kit ledger (see
:mod:`kit.cluster._shared`). Its dispatcher reports at each capacity check
(a fraction of a second apart) and gets back its fair share of the worker
threads, how many runs share the cluster, and whether someone asked for it
to stop (``kit cluster cancel``).
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import os
import socket
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.cluster._keys import digest, new_key


def who() -> str:
    """Return who runs this process: ``JUPYTERHUB_USER``, else the login name.

    Examples
    --------
    >>> isinstance(who(), str) and who() != ""
    True
    """
    user = os.environ.get("JUPYTERHUB_USER")
    if user:
        return user
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return f"uid {os.getuid()}"


@dataclass
class Share:
    """What the cluster says to a run: its threads, the run's share, who else is there.

    Examples
    --------
    >>> Share(threads=8, share=4, runs=2, clients=3).shared
    True
    """

    threads: int
    share: int
    runs: int
    clients: int
    cancel_by: str | None = None

    @property
    def shared(self) -> bool:
        """Whether other runs are on the cluster now."""
        return self.runs > 1

    @property
    def in_company(self) -> bool:
        """Whether other clients are connected: a run of theirs may start at any moment."""
        return self.clients > 1


class ClusterSeat:
    """A run's seat on a cluster (the driver's handle on it).

    Parameters
    ----------
    client
        The run's Dask client.
    run_id, runner, env, total, max_slots
        What the teacher's list shows of the run, and its cap.
    progress
        Returns the run's items finished and failed so far, and its first item error in a
        line ("" while none failed).
    keys
        Where the run's key is kept while it runs (its session's ``run_keys``): the key
        cancels the run on the cluster; the scheduler keeps only its digest.
    """

    def __init__(
        self,
        client: Any,
        run_id: str,
        *,
        runner: str,
        env: str,
        total: int,
        max_slots: int | None,
        progress: Callable[[], tuple[int, int, str]],
        keys: dict[str, str] | None = None,
    ) -> None:
        from kit.cluster._shared import join_run

        self.client = client
        self.run_id = run_id
        self._progress = progress
        self._warned = False
        self.key = new_key()
        self._keys = keys if keys is not None else {}
        self._keys[run_id] = self.key
        self._seat = {
            "run_id": run_id,
            "client": client.id,
            "user": who(),
            "host": socket.gethostname(),
            "runner": runner,
            "env": env,
            "total": total,
            "max_slots": max_slots,
            "owner": digest(self.key),
        }
        # No registration here: the run's attach registered the ledger a moment ago
        # (a scheduler started again since is met at the first report).
        said = client.run_on_scheduler(functools.partial(join_run, self._seat))
        self.last = Share(said["threads"], said["share"], said["runs"], said["clients"])

    @property
    def cancel_by(self) -> str | None:
        """Who asked for this run to stop on the cluster, or None."""
        return self.last.cancel_by

    def cancelled(self) -> bool:
        """Whether someone asked on the cluster for this run to stop (said once, as a warning)."""
        if self.last.cancel_by is None:
            return False
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"run {self.run_id} was cancelled on the cluster by {self.last.cancel_by} "
                "(kit cluster cancel); its completed items are kept",
                RuntimeWarning,
                stacklevel=1,
            )
        return True

    def report(self, chunks_out: int) -> Share:
        """Tell the cluster how far the run is; return its share now.

        Raises whatever the client raises when the scheduler cannot be
        reached: the caller keeps its last share then.
        """
        from kit.cluster._shared import join_run, report_run

        done, failed, first_error = self._progress()
        said = self.client.run_on_scheduler(
            functools.partial(report_run, self.run_id, done, failed, chunks_out, first_error)
        )
        if not said["seated"]:  # a scheduler that came back: seated anew
            self.client.register_plugin(self._ledger())
            said = self.client.run_on_scheduler(functools.partial(join_run, self._seat))
        self.last = Share(
            said["threads"], said["share"], said["runs"], said["clients"], said.get("cancel_by")
        )
        return self.last

    def leave(self) -> None:
        """Give the seat up (the run ended); the scheduler may be gone already."""
        from kit.cluster._shared import leave_run

        self._keys.pop(self.run_id, None)
        with contextlib.suppress(Exception):
            self.client.run_on_scheduler(functools.partial(leave_run, self.run_id))

    @staticmethod
    def _ledger() -> Any:
        from kit.cluster._shared import ClusterLedger

        return ClusterLedger()
