"""What closing a local cluster to other users costs: TLS against plain TCP, side by side.

Kit's LocalCluster speaks TLS with temporary credentials (see
``kit.cluster._builders.local_tls``). Each mode, alternated three times: the time to
start a 2-worker LocalCluster with its client, 2,000 tiny tasks through
``client.map`` (per task), and 100 submit-and-wait round trips.
Results go to benchmarks/results/tls.json (the manual's performance page is made from it).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import describe, write_results

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = 2000
ROUND_TRIPS = 100


def inc(x: int) -> int:
    return x + 1


def measure(tls: bool) -> dict[str, float]:
    from distributed import Client, LocalCluster

    from kit.cluster._builders import local_tls

    began = time.perf_counter()
    options: dict[str, Any] = local_tls() if tls else {}
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, **options
    )
    client = Client(cluster, security=options.get("security"))  # type: ignore[no-untyped-call]
    start = time.perf_counter() - began
    client.gather(client.map(inc, range(10), pure=False))  # type: ignore[no-untyped-call]
    began = time.perf_counter()
    client.gather(client.map(inc, range(TASKS), pure=False))  # type: ignore[no-untyped-call]
    per_task = (time.perf_counter() - began) / TASKS
    began = time.perf_counter()
    for i in range(ROUND_TRIPS):
        client.submit(inc, i, pure=False).result()
    round_trip = (time.perf_counter() - began) / ROUND_TRIPS
    client.close()  # type: ignore[no-untyped-call]
    cluster.close()
    return {"start_s": start, "per_task_us": per_task * 1e6, "round_trip_ms": round_trip * 1e3}


def main() -> int:
    machine = describe(("dask", "distributed"))
    runs: dict[str, list[dict[str, float]]] = {"tcp": [], "tls": []}
    for _ in range(3):
        for mode in ("tcp", "tls"):
            runs[mode].append(measure(mode == "tls"))
    median = {
        mode: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        for mode, rows in runs.items()
    }
    extra = median["tls"]["per_task_us"] / median["tcp"]["per_task_us"] - 1
    title, packages = "TLS on local clusters", ("dask", "distributed")
    lines = [
        "Command: `make bench` (or `python benchmarks/bench_tls.py`); medians of 3 runs each.",
        "",
        "| protocol | start (s) | per task, client.map (µs) | submit round trip (ms) |",
        "|---|---|---|---|",
        *(
            f"| {mode} | {m['start_s']:.2f} | {m['per_task_us']:.0f} | {m['round_trip_ms']:.1f} |"
            for mode, m in median.items()
        ),
        "",
        f"TLS costs {100 * extra:+.0f}% per task.",
        "",
    ]
    checks = {"TLS costs at most 20% per task": extra <= 0.20}
    write_results(
        RESULTS,
        "tls",
        {"machine": machine, "runs": runs, "median": median},
        lines,
        checks,
        title=title,
        packages=packages,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
