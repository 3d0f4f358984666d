"""The quickstart job: ``python -m kit.examples.quickstart [OVERRIDES...]``.

A provider builds a toy "model" (a polynomial) once per worker; a runner
evaluates it on every item. The config is ``quickstart.yaml`` beside this
file; overrides use the Hydra grammar, e.g. ``parallel.env=inline`` or
``items.stop=50``.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from kit import EnvironmentProvider, Runner, RunResult
from kit.config import ConfigError, load_config

CONFIG_PATH = Path(__file__).with_name("quickstart.yaml")


class Polynomial:
    """A stand-in for a heavy model: slow to build, cheap to call."""

    def __init__(self, coefficients: Sequence[float], work_seconds: float) -> None:
        time.sleep(0.1)  # loading weights, say
        self.coefficients = list(coefficients)
        self.work_seconds = work_seconds
        self.built_by = os.getpid()

    def __call__(self, x: float) -> float:
        """Evaluate the polynomial at ``x``."""
        if self.work_seconds:
            time.sleep(self.work_seconds)
        return sum(c * x**k for k, c in enumerate(self.coefficients))


def build_model(cfg: DictConfig) -> dict[str, Any]:
    """Build the env: the model, from the ``model`` section."""
    return {"model": Polynomial(cfg.model.coefficients, cfg.model.work_seconds)}


class ModelProvider(EnvironmentProvider):
    """Build the polynomial once on the driver (inline) or once per worker."""

    def build_env_local(self) -> dict[str, Any]:
        """Build the env in this process."""
        return build_model(self.config)

    def make_worker_setup_fn(self) -> Callable[[], dict[str, Any]]:
        """Return the function each worker calls once."""
        # A partial of a module-level function: picklable, unlike a closure.
        return functools.partial(build_model, self.config)


class Evaluate(Runner):
    """Evaluate the model at x = item index / 10."""

    #: Which process built the model differs between workers by design: ``kit check`` skips it.
    check_ignore = ("worker_pid",)

    @staticmethod
    def forward(idx: int, model: Polynomial) -> dict[str, Any]:
        """Return x, y and the process that built the model; the dashboard plots ``metrics``."""
        x = idx / 10
        y = round(model(x), 4)
        return {"x": x, "y": y, "worker_pid": model.built_by, "metrics": {"y": y}}

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        """Return the least and the greatest y (the dashboard shows y's mean, a metric)."""
        ys = [r["y"] for r in records if r is not None]
        return {"min_y": min(ys), "max_y": max(ys)} if ys else {}


def quickstart_config(overrides: Sequence[str] = ()) -> DictConfig:
    """Return the quickstart config with ``overrides`` applied.

    Examples
    --------
    >>> quickstart_config(["parallel.n_workers=1"]).parallel.n_workers
    1
    """
    return load_config(CONFIG_PATH, overrides)


def run_quickstart(cfg: DictConfig) -> RunResult:
    """Run the quickstart job described by ``cfg``.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()  # without one, the run would go to runs/ here
    >>> cfg = quickstart_config(["parallel.env=inline", "items.stop=3", f"output_dir={folder}"])
    >>> [r["y"] for r in run_quickstart(cfg).records]
    [1.0, 0.805, 0.62]
    """
    from kit._from_config import build_runner

    runner, items = build_runner(cfg)  # as `kit run kit/examples/quickstart.yaml` does
    result: RunResult = runner.run(items)
    return result


def format_table(result: RunResult, rows: int = 8) -> str:
    """Return the first ``rows`` records as a text table."""
    lines = [f"{'index':>5}  {'x':>6}  {'y':>10}  {'worker pid':>10}"]
    for index, record in list(zip(result.indices, result.records, strict=True))[:rows]:
        if record is None:
            lines.append(f"{index:>5}  failed")
        else:
            lines.append(
                f"{index:>5}  {record['x']:>6.1f}  {record['y']:>10.4f}  {record['worker_pid']:>10}"
            )
    if len(result.records) > rows:
        lines.append(f"  ... {len(result.records) - rows} more")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the quickstart and print its results table and stats; return the exit code."""
    overrides = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg = quickstart_config(overrides)
        print(f"quickstart: {CONFIG_PATH.name} {' '.join(overrides)}".rstrip())
        result = run_quickstart(cfg)
    except ConfigError as exc:
        print(f"quickstart: error: {exc}", file=sys.stderr)
        return 2
    stats = result.stats
    print(format_table(result))
    print(
        f"\n{stats.ok} ok, {stats.failed} failed, {stats.resumed} resumed from {result.output_dir}"
        f" | {stats.wall_seconds:.2f} s wall, {stats.items_per_second:.0f} items/s,"
        f" {stats.chunks} chunks"
    )
    for name, worker in stats.workers.items():
        print(f"  worker {name}: {worker.items} items, {worker.busy_seconds:.2f} s busy")
    print(f"summary: {result.summary}")
    return 0 if stats.failed == 0 else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
