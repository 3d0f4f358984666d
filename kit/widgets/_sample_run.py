"""What a run panel does, without a widget: pick items, start a run on them, end it once.

:class:`SampleRun` is the run panel's model: the runner, the whole list of
items, which ones the latest run took, its handle and result, and the
``kit submit`` command for the same experiment at full size. The panel
(:class:`~kit.widgets.RunPanel`) draws it and reads its buttons into it.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit import RunError, RunHandle, Runner, RunResult
from kit.check import CheckResult, check
from kit.cluster import scale_out_command, scale_out_config
from kit.config import ParallelConfig, parallel_section
from kit.history import items_digest
from kit.launch import RunRequest, launch, normalize_indices
from kit.result import Index


def choose(indices: Sequence[Index], n: int, how: str, seed: int) -> list[Index]:
    """Pick ``n`` indices: the first ones, or a seeded random sample kept in order.

    Examples
    --------
    >>> choose(range(10), 3, "first", 0)
    [0, 1, 2]
    >>> choose(range(10), 3, "random", 1) == choose(range(10), 3, "random", 1)
    True
    """
    items = list(indices)
    n = max(0, min(n, len(items)))
    if how == "random":
        positions = sorted(random.Random(seed).sample(range(len(items)), n))
        return [items[p] for p in positions]
    return items[:n]


class SampleRun:
    """A run over a few of the items, in the background; the same experiment at full size.

    Parameters
    ----------
    runner
        The runner (its provider's config is the experiment).
    indices
        All the items; the panel runs the first N or a random sample.
    base_config, config_path
        The config as loaded from ``config_path``, for the scale-out command.
    scale_out_dir
        Where Scale out saves the config file its command names, when that
        file is neither beside the notebook nor below it (a config shipped
        in a package, or one never written); default ``runs/scale-out``.
        The Experiment app saves it in its runs folder.
    check
        Called before each run; what it raises is shown and nothing runs
        (the Experiment app refuses a config with problems this way).
    scale_out
        Overrides for the cluster, e.g. ``["parallel.env=slurm"]``.
    on_end
        Called with the handle of each run once it has ended, whatever its
        status (the Experiment app keeps a history).
    output_dir_for
        Called before each run for the directory to store it in (None keeps
        the results in memory only).
    parallel_for
        Called before each run for the ``parallel`` section to run on (the
        cluster panel's), instead of the runner's own.

    Examples
    --------
    >>> from kit.examples.toy import Env, Square
    >>> sample = SampleRun(Square(Env({})), range(100))
    >>> handle = sample.start(3, "first", 0)
    >>> sample.wait(lambda handle: None, timeout=30).records, sample.selection["of"]
    ([0, 1, 4], 100)
    """

    def __init__(
        self,
        runner: Runner,
        indices: Any,
        *,
        base_config: Any = None,
        config_path: str = "config.yaml",
        scale_out: Sequence[str] = ("parallel.env=slurm",),
        on_end: Callable[[RunHandle], None] | None = None,
        output_dir_for: Callable[[], Path | None] | None = None,
        parallel_for: Callable[[], ParallelConfig] | None = None,
        scale_out_dir: str | os.PathLike[str] | None = None,
        check: Callable[[], None] | None = None,
    ) -> None:
        self.runner = runner
        self.indices = list(normalize_indices(indices))
        self.base_config = base_config
        self.config_path = config_path
        self.scale_out_overrides = list(scale_out)
        self.scale_out_dir = Path(scale_out_dir or Path("runs") / "scale-out")
        self.check = check
        self.on_end = on_end
        self.output_dir_for = output_dir_for
        self.parallel_for = parallel_for
        self.handle: RunHandle | None = None
        #: Which items the latest run took (count, how, seed, of, digest).
        self.selection: dict[str, Any] = {}
        self.result: RunResult | None = None
        self._lock = threading.RLock()
        self._finished: RunHandle | None = None

    def set_indices(self, indices: Any) -> None:
        """Replace the list of all items (as the config's ``items`` change, say)."""
        self.indices = list(normalize_indices(indices))

    def selected(self, how_many: int, how: str, seed: int) -> list[Index]:
        """Return the items a run of ``how_many``, picked ``how`` with ``seed``, processes."""
        return choose(self.indices, how_many, how, seed)

    def start(self, how_many: int, how: str, seed: int) -> RunHandle:
        """Start a run over the selected items in the background; return its handle at once."""
        if self.handle is not None and not self.handle.done():
            raise RuntimeError("a run is going on: wait for it or cancel it first")
        if self.check is not None:
            self.check()
        items = self.selected(how_many, how, seed)
        self.selection = {
            "count": len(items),
            "how": how,
            "seed": seed,
            "of": len(self.indices),
            "digest": items_digest(items),
        }
        # A check on a few items is stored where the app says (its history), never in
        # the runner's own output_dir: that belongs to the full run (and would refuse
        # a different item list).
        request = RunRequest.of(self.runner, items).replace(
            output_dir=self.output_dir_for() if self.output_dir_for is not None else None
        )
        if self.parallel_for is not None:
            request = request.replace(parallel=self.parallel_for())
        self.result = None
        self.handle = launch(request)
        return self.handle

    def scale_out_target(self) -> ParallelConfig | None:
        """Return the ``parallel`` section the scale-out command runs on (None if unknown)."""
        config = self.runner.provider.config
        if not isinstance(config, DictConfig):
            return None
        try:
            _, target = scale_out_config(config, self.scale_out_overrides)
            return parallel_section(target.get("parallel"))
        except Exception:  # a config the scale-out cannot take: forecast where it checks
            return None

    def start_check(
        self, how_many: int, seed: int, on_step: Callable[[str], None] | None = None
    ) -> Future[CheckResult]:
        """Check the full experiment on ``how_many`` items before scaling out, in the background.

        The sample is spread over all the items (``seed`` picks it); it runs
        here, on the panel's cluster and batched as configured
        (:func:`kit.check.check`); the forecast is for the scale-out
        command's cluster. The verdict is kept in the runner's own
        ``output_dir``, where the scaled-out run's report sets it against the run.
        """
        if self.check is not None:
            self.check()
        request = RunRequest.of(self.runner, self.indices)
        if self.parallel_for is not None:
            request = request.replace(parallel=self.parallel_for())
        target = self.scale_out_target()
        verdict: Future[CheckResult] = Future()

        def work() -> None:
            try:
                made = check(request, n=how_many, seed=seed, target=target, on_step=on_step)
            except BaseException as exc:  # shown by the panel, never lost
                verdict.set_exception(exc)
            else:
                verdict.set_result(made)

        threading.Thread(target=work, name="kit-check", daemon=True).start()
        return verdict

    def cancel(self) -> None:
        """Stop the run; completed items are kept."""
        if self.handle is not None:
            self.handle.cancel()

    def finish(self, handle: RunHandle, show: Callable[[RunHandle], None]) -> None:
        """Take the run's end once: ``show`` it, keep its result, tell ``on_end``.

        Called by the panel's done callback and by :meth:`wait`: whichever
        comes first does it and the other waits for it (the history
        included), under the lock.
        """
        with self._lock:
            if self._finished is handle:
                return
            self._finished = handle
            error = handle.exception()
            if error is None:
                self.result = handle.result()
            elif isinstance(error, RunError):
                self.result = error.result
            show(handle)
            if self.on_end is not None:
                self.on_end(handle)

    def wait(self, show: Callable[[RunHandle], None], timeout: float | None = None) -> RunResult:
        """Wait for the current run and return its result (for scripts and tests).

        A run stopped early returns its partial result; a run that ended in
        error raises what ended it.
        """
        if self.handle is None:
            raise RuntimeError("nothing is running: click Run first")
        handle = self.handle
        error = handle.exception(timeout=timeout)
        self.finish(handle, show)
        if error is not None and not isinstance(error, RunError):
            raise error
        return handle.result() if error is None else error.result

    def scale_out_command(self) -> str:
        """Return the ``kit submit`` command that runs this experiment on the cluster.

        See :func:`kit.cluster.scale_out_command`: it runs as printed from the
        notebook's folder, a config file from elsewhere saved in
        :attr:`scale_out_dir` first.
        """
        config = self.runner.provider.config
        base = self.base_config if self.base_config is not None else config
        return scale_out_command(
            base,
            config,
            self.scale_out_overrides,
            config_path=self.config_path,
            save_dir=self.scale_out_dir,
        )
