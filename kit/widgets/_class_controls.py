"""The cluster panel's teacher controls: cancel a run on the cluster, warm a config's env.

:class:`ClassControls` is the row of the cluster panel a teacher uses on a
class's cluster: the runs to choose from with **Cancel run** (as ``kit cluster
cancel`` does) and a config file with **Warm** (as ``kit cluster warm`` does).
It acts through the panel's :class:`~kit.widgets._cluster_control.ClusterControl`
and says what happened in the panel's status line.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import ipywidgets as w

from kit.cluster import run_rows
from kit.widgets._cluster_control import ClusterControl
from kit.widgets._kernel import on_kernel_thread


def run_choices(listing: dict[str, Any]) -> list[tuple[str, str]]:
    """Return the runs on the cluster as a dropdown's (label, run id) options, oldest first.

    Examples
    --------
    >>> seat = {"run_id": "1a2b3c", "user": "ana", "host": "lab", "runner": "Decode",
    ...         "env": "kit-env:m.P:1-2", "total": 20, "done": 5, "failed": 0,
    ...         "chunks_out": 1, "share": 2, "started": 0.0, "cancel_by": None}
    >>> run_choices({"threads": 4, "runs": [seat], "envs": {}})
    [('1a2b3c · ana · Decode · 5/20', '1a2b3c')]
    """
    rows = run_rows(listing)
    return [(f"{r['run']} · {r['user']} · {r['runner']} · {r['items']}", r["run"]) for r in rows]


class ClassControls(w.VBox):  # type: ignore[misc]
    """Cancel a run on the cluster; build a config's env on every worker.

    ``say`` shows a line in the panel's status; ``failed`` shows an error there.

    Examples
    --------
    >>> controls = ClassControls(ClusterControl({"env": "inline"}), print, print)
    >>> controls.cancel_button.disabled, controls.warm_button.disabled  # no cluster yet
    (True, True)
    """

    def __init__(
        self,
        control: ClusterControl,
        say: Callable[[str], None],
        failed: Callable[[BaseException], None],
    ) -> None:
        super().__init__()
        self.control, self._say, self._failed = control, say, failed
        self._warming = False
        self.run_choice = w.Dropdown(options=[], description="run", layout=w.Layout(width="360px"))
        self.cancel_button = w.Button(description="Cancel run", icon="ban", disabled=True)
        #: A config file whose env the Warm button builds on every worker (the workshop's).
        self.warm_config = w.Text(
            placeholder="config file, e.g. workshop.yaml",
            description="config",
            layout=w.Layout(width="360px"),
        )
        self.warm_button = w.Button(description="Warm", icon="fire", disabled=True)
        self.cancel_button.on_click(lambda _: self._guarded(self.cancel_run))
        self.warm_button.on_click(lambda _: self._guarded(self.warm))
        self.children = [
            w.HBox([self.run_choice, self.cancel_button]),
            w.HBox([self.warm_config, self.warm_button]),
        ]

    def cancel_run(self) -> dict[str, Any]:
        """Ask the run chosen in the runs list to stop, as ``kit cluster cancel`` does.

        It ends as cancelled at its next report, its completed items kept, and
        its notebook is told who cancelled it; other runs go on.
        """
        seat = self.control.cancel_run(self.run_choice.value)
        self._say(f"asked run {seat['run_id']} ({seat['user']}) to stop")
        return seat

    def warm(self) -> Future[dict[str, Any]]:
        """Build the env of the config file named in the box on every worker, in the background.

        As ``kit cluster warm`` does: the class's first runs find it built.
        The status says "warming…", then what was built on how many workers
        in how long (or why it could not: a config error names its key).
        """
        self._warming = True  # the button stays off until this one is built (or said why not)
        self._say(f"warming the env of {self.warm_config.value.strip() or '?'}…")
        self.warm_button.disabled = True
        warmed = self.control.warm(self.warm_config.value)
        warmed.add_done_callback(lambda done: on_kernel_thread(lambda: self._warmed(done)))
        return warmed

    def show_runs(self, listing: dict[str, Any]) -> None:
        """Offer the runs of ``listing`` to cancel; the one chosen stays chosen."""
        options = run_choices(listing)
        if list(self.run_choice.options) != options:
            chosen = self.run_choice.value
            self.run_choice.options = options
            runs = [value for _, value in options]
            # The run chosen stays chosen; else the oldest, so "Cancel run" never names nothing.
            self.run_choice.value = chosen if chosen in runs else (runs[0] if runs else None)
        self.cancel_button.disabled = not options

    def connected(self, on: bool) -> None:
        """Enable warming while a cluster is there; with none, no run to cancel either."""
        self.warm_button.disabled = not on or self._warming
        if not on:
            self.run_choice.options = []
            self.cancel_button.disabled = True

    def _warmed(self, warmed: Future[dict[str, Any]]) -> None:
        error = warmed.exception()
        if error is not None:
            self._failed(error)
        else:
            said = warmed.result()
            built = f"built {said['env']} on {said['workers']} workers"
            self._say(f"{built} in {said['seconds']:.1f} s")
        # The button comes back last, once the outcome is shown.
        self._warming = False
        session = self.control.session
        self.warm_button.disabled = session is None or session.client is None

    def _guarded(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as exc:
            self._failed(exc)
