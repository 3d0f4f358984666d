"""What a cluster panel does, without a widget: the session it shows, started and watched.

:class:`ClusterControl` is the cluster panel's model: which ``parallel``
section runs use, the session it started or was shown, starting one on a
thread of its own, scaling, adapting, cancelling a run on it, warming an env
on its workers (on a thread of its own too), and watching
its workers and runs. The panel (:class:`~kit.widgets.ClusterPanel`) draws
what it reports and reads its buttons into it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import kit
from kit.cluster import cancel, class_runs, warm
from kit.config import ParallelConfig, load_config, parallel_section

T = TypeVar("T")

#: What the watcher reports, each on the watcher's thread: the session, then what it asked.
Report = Callable[[kit.Session, dict[str, Any], dict[str, Any]], None]


def in_background(call: Callable[[], T], name: str) -> Future[T]:
    """Run ``call`` on a daemon thread named ``name``; return its future at once.

    What takes seconds (a cluster starting, an env building) leaves the
    caller's thread (a notebook's kernel) free; the future holds the value or
    what stopped it.

    Examples
    --------
    >>> in_background(lambda: 6 * 7, "answer").result(timeout=10)
    42
    """
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(call())
        except Exception as exc:
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done


class ClusterControl:
    """The cluster runs use, and the session running it (None when stopped).

    Examples
    --------
    >>> control = ClusterControl({"env": "inline"})
    >>> session = control.start(control.parallel).result(timeout=60)
    >>> control.session is None, control.for_runs(control.parallel).env  # not shown yet
    (True, 'inline')
    """

    def __init__(self, parallel: Any) -> None:
        self.parallel: ParallelConfig = (
            parallel if isinstance(parallel, ParallelConfig) else parallel_section(parallel)
        )
        self.session: kit.Session | None = None
        #: The session being started by the latest :meth:`start` (a future).
        self.ready: Future[kit.Session] | None = None
        #: Workers a :meth:`scale` asked for, until they are there.
        self.target: int | None = None
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        """Whether a session is shown (and so used by runs)."""
        return self.session is not None

    @property
    def scalable(self) -> bool:
        """Whether the session's cluster is one Kit started (so it can scale and adapt)."""
        return self.session is not None and self.session.cluster is not None

    def for_runs(self, shown: ParallelConfig) -> ParallelConfig:
        """Return the ``parallel`` section runs use: the running cluster's, else ``shown``."""
        session = self.session
        if session is not None and not session.closed:
            return session.parallel
        return shown

    def running_before(self) -> kit.Session | None:
        """Return a session of this ``parallel`` section started before (by a run, say)."""
        for session in kit.cluster.sessions():
            if session.parallel == self.parallel and not session.closed:
                return session
        return None

    def start(self, parallel: ParallelConfig) -> Future[kit.Session]:
        """Start (or reuse) the session of ``parallel`` on a thread; return its future at once.

        A cluster takes seconds to start: the caller's thread (a notebook's
        kernel) stays free, and the future holds the session or what stopped it.
        """
        self.parallel = parallel
        self.ready = in_background(lambda: kit.get_session(parallel), "kit-cluster-start")
        return self.ready

    def show(self, session: kit.Session) -> bool:
        """Take ``session`` as the cluster runs use; False if it was already."""
        if self.session is session:
            return False
        self.session = session
        self.parallel = session.parallel
        return True

    def forget(self, session: kit.Session) -> None:
        """Drop ``session``, closed elsewhere, if it is still the one shown."""
        if self.session is session:
            self.session = None

    def stop(self) -> None:
        """Close the session (and the cluster, if Kit started it); stop watching."""
        self._stop.set()
        if self.session is not None:
            self.session.close()
        self.session = None

    def scale(self, n_workers: int) -> None:
        """Scale the cluster to ``n_workers``."""
        if self.session is None or self.session.cluster is None:
            raise RuntimeError("only a cluster Kit started can be scaled (not inline or remote)")
        self.session.cluster.scale(n_workers)
        self.target = n_workers

    def adapt(self, minimum: int, maximum: int) -> None:
        """Let the cluster scale itself between ``minimum`` and ``maximum`` workers."""
        if self.session is None or self.session.cluster is None:
            raise RuntimeError("only a cluster Kit started can adapt (not inline or remote)")
        self.session.cluster.adapt(minimum=minimum, maximum=maximum)

    def cancel_run(self, run_id: str | None) -> dict[str, Any]:
        """Ask run ``run_id`` on the cluster to stop, as ``kit cluster cancel`` does.

        A run of this session's is cancelled by its own key; another's by the
        teacher's token, if this user claimed the class (``kit cluster claim``).
        """
        if self.session is None or self.session.client is None or not run_id:
            raise RuntimeError("choose a run on a running cluster to cancel")
        own = [key for rid, key in self.session.run_keys.items() if rid.startswith(run_id)]
        return cancel(self.session.client, run_id, own[0] if len(own) == 1 else None)

    def warm(self, config_file: str) -> Future[dict[str, Any]]:
        """Build the env of ``config_file``'s provider on every worker, on a thread.

        As ``kit cluster warm`` does. Returns at once: the future holds what
        :func:`kit.cluster.warm` says, or why it could not (no cluster, a
        config error naming its key or file).
        """
        session = self.session

        def build() -> dict[str, Any]:
            if session is None or session.client is None:
                raise RuntimeError("start the cluster first: warming builds on it")
            if not config_file.strip():
                raise ValueError("name the config file whose env to build")
            return warm(session, load_config(config_file.strip()))

        return in_background(build, "kit-cluster-warm")

    def ask(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Return the scheduler's workers and the runs on the cluster now (None: no cluster)."""
        session = self.session
        if session is None or session.client is None:
            return None
        return session.client.scheduler_info(), class_runs(session.client)

    def scaled(self, workers: int) -> bool:
        """Whether a scale asked for has come true with ``workers`` workers (then forget it)."""
        if self.target is not None and workers == self.target:
            self.target = None
            return True
        return False

    def watch(
        self,
        every: float,
        report: Report,
        closed: Callable[[], None],
        failed: Callable[[BaseException], None],
    ) -> None:
        """Ask the session's scheduler every ``every`` seconds, on a thread, until it changes.

        Each answer goes to ``report``; a session closed elsewhere
        (``kit.shutdown()``) to ``closed``, which drops it with :meth:`forget`
        where the caller draws; a cluster gone away to ``failed``. All three
        are called on the watcher's thread.
        """
        session = self.session
        if session is None or session.client is None:
            return
        self._stop.clear()

        def watch() -> None:
            while not self._stop.wait(every):
                if session is not self.session:
                    return
                if session.closed:  # closed elsewhere: its links are dead
                    closed()
                    return
                try:
                    asked = self.ask()
                except Exception as exc:  # the cluster went away: say so, stop watching
                    failed(exc)
                    return
                if asked is not None:
                    report(session, *asked)

        threading.Thread(target=watch, name="kit-cluster-panel", daemon=True).start()
