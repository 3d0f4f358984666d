"""What exporting to TensorBoard and MLflow costs a run (``make bench``).

20,000 trivial items on a LocalCluster (2 workers), stored in a fresh output
folder each run, with no tracker, with TensorBoard, with MLflow (a SQLite
store beside the runs) and with both. Each round runs the four once, in a
rotated order (this shared machine's speed drifts by more than what is
measured); a variant's cost is the median over rounds of its time over the
same round's run without trackers. The first run of each variant in the
process (MLflow's import and a new database's tables) is reported apart:
it is paid once per session, not per run.

Results are printed and written to benchmarks/results/tracking.json (the manual's
performance page is made from it).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kit
from kit import Runner
from kit.tracking import Tracking
from kit.tracking._exporter import Exporters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results
from bench_dashboard import Nothing

RESULTS = Path(__file__).resolve().parent / "results"
PARALLEL = {"env": "local", "n_workers": 2}
N = 20_000
ROUNDS = 15
#: Each variant's ``tracking=`` (None: no tracker).
VARIANTS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "TensorBoard": {"tensorboard": True},
    "MLflow": {"mlflow": True},
    "both": {"tensorboard": True, "mlflow": True},
}


class Trivial(Runner):
    @staticmethod
    def forward(idx: int) -> dict[str, Any]:
        return {"idx": idx, "metrics": {"err": idx % 2}}


def timed(
    root: Path, name: str, tracking: dict[str, Any] | None, number: int
) -> tuple[float, float]:
    """Return the run's wall time and its exporters' own cost (thread CPU + the end's wait)."""
    folder = root / f"{name}-{number:03d}"
    runner = Trivial(Nothing({"variant": name}), parallel=PARALLEL, output_dir=folder)
    # The exporters Runner(tracking=...) would subscribe, held here to read their cost.
    chosen = Tracking.of(tracking)
    group = Exporters(chosen.exporters(folder, None) if chosen is not None else [])
    began = time.perf_counter()
    result = runner.run(N, on_event=group)
    wall = time.perf_counter() - began
    assert str(result.status) == "completed" and result.stats.ok == N
    own = sum(e.busy_seconds for e in group.exporters) + max(
        (e.end_seconds for e in group.exporters), default=0.0
    )
    return wall, own


def main() -> int:
    machine = describe(("dask", "distributed", "mlflow", "tensorboard"))
    root = Path(tempfile.mkdtemp(prefix="kit-bench-tracking-")) / "runs"
    timed(root, "warm", None, 0)  # the cluster starts once, before anything is measured
    first = {name: timed(root, f"first-{name}", t, 0)[0] for name, t in VARIANTS.items()}
    names = list(VARIANTS)
    walls: dict[str, list[float]] = {name: [] for name in names}
    costs: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(ROUNDS):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            wall, own = timed(root, name, VARIANTS[name], round_ + 1)
            walls[name].append(wall)
            costs[name].append(own)
    kit.shutdown()
    ratios = {
        name: [w / base for w, base in zip(walls[name], walls["none"], strict=True)]
        for name in names
    }
    overhead = {name: statistics.median(ratios[name]) - 1 for name in names}
    # The exporters' own cost against the run without them: an upper bound on what they
    # add (their thread's CPU as if it all displaced the run's, plus the end's wait), and
    # one this machine's drift does not blur as it blurs wall-time ratios.
    base = statistics.median(walls["none"])
    share = {name: statistics.median(costs[name]) / base for name in names}
    results = {
        "machine": machine,
        "items": N,
        "rounds": ROUNDS,
        "walls": walls,
        "ratios": ratios,
        "overhead": overhead,
        "exporter_seconds": costs,
        "exporter_share": share,
        "first_run": first,
    }
    checks = {
        f"{name}: exporting adds at most 5% to the run's wall time (median of rounds)": (
            overhead[name] <= 0.05
        )
        for name in names
        if name != "none"
    }
    title, packages = "Tracking benchmark", ("dask", "mlflow", "tensorboard")
    lines = [
        f"Command: `python benchmarks/bench_tracking.py` (part of `make bench`). {N:,} trivial "
        f"items with a running metric, LocalCluster with 2 workers, a fresh output folder per "
        f"run; {ROUNDS} rounds, each running every variant once in a rotated order.",
        "",
        "| trackers | median s | each round (s) | median of time / no tracker | exporters' "
        "own cost (median s; share of the run) | first run s |",
        "|---|---|---|---|---|---|",
        *[
            f"| {name} | {statistics.median(walls[name]):.2f} | "
            f"{', '.join(f'{x:.2f}' for x in walls[name])} | "
            f"{1 + overhead[name]:.3f} | {statistics.median(costs[name]):.3f}; "
            f"{100 * share[name]:.1f}% | {first[name]:.2f} |"
            for name in names
        ],
        "",
        "The exporters' own cost is their threads' CPU time plus the time the run's end "
        "waited for them: an upper bound on what they add to a run (as if all their CPU "
        "displaced the run's, which it does only where the run's driver was busy too), "
        "measured without the drift between runs that blurs the wall-time ratios on this "
        "shared machine. MLflow's is mostly its SQLite store's transactions: a run makes "
        "about six (create the run, its params with the first values, a write a second, "
        "the end's values, its status, its report).",
        "",
        "The first run of a variant in a process pays once what later runs do not: importing "
        "mlflow and, for a new database, creating its tables (both on the exporter's own "
        "thread while the run goes, then waited for at the run's end).",
        "",
    ]
    write_results(RESULTS, "tracking", results, lines, checks, title=title, packages=packages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
