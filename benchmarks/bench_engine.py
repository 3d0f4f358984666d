"""Kit's engine side by side with plain Dask and multiprocessing (``make bench``).

1. Per-item overhead on trivial items: Kit (LocalCluster, 2 workers) vs one
   ``client.map`` task per item vs ``multiprocessing.Pool.map`` (chunksize 500).
2. Speedup on 200 items of 10 ms CPU work: Kit on 2 workers vs inline.
3. Makespan on 400 items with lognormal durations: Kit's dynamic chunks vs
   static one-shard-per-worker (ESPnet3's way) vs the ideal (total work / 2).

Results are printed and written to benchmarks/results/engine.{json,md}.
"""

from __future__ import annotations

import multiprocessing
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import kit
from kit import EnvironmentProvider, Runner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, machine_line, write_results

RESULTS = Path(__file__).resolve().parent / "results"
PARALLEL = {"env": "local", "n_workers": 2}
REPEATS = 3
SHUFFLES = 5


def busy(seconds: float) -> None:
    """Burn CPU (not sleep) for ``seconds``."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def trivial(i: int) -> int:
    return i * 2


def work_item(seconds: float) -> float:
    busy(seconds)
    return seconds


def work_shard(durations: list[float]) -> float:
    for seconds in durations:
        busy(seconds)
    return sum(durations)


class Durations(EnvironmentProvider):
    def build_env_local(self) -> dict[str, Any]:
        return {"durations": list(self.config.durations)}

    def make_worker_setup_fn(self) -> Any:
        durations = list(self.config.durations)
        return lambda: {"durations": durations}


class Trivial(Runner):
    @staticmethod
    def forward(idx: int) -> int:
        return idx * 2


class Work(Runner):
    @staticmethod
    def forward(idx: int, durations: list[float]) -> float:
        busy(durations[idx])
        return durations[idx]


def best(fn: Any, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def overhead(client: Any) -> dict[str, Any]:
    n = 20_000
    provider = Durations(OmegaConf.create({"durations": []}))
    runner = Trivial(provider, parallel=PARALLEL)
    runner.run(100)  # warm: env built, code shipped
    kit_s = best(lambda: runner.run(n))
    n_map = 2_000  # one task per item is slow: measure fewer and scale
    client.gather(client.map(trivial, range(100), pure=False))
    map_s = best(lambda: client.gather(client.map(trivial, range(n_map), pure=False)))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(trivial, range(1000), chunksize=500)
        pool_s = best(lambda: pool.map(trivial, range(n), chunksize=500))
    return {
        "items": n,
        "kit_us_per_item": kit_s / n * 1e6,
        "client_map_us_per_item": map_s / n_map * 1e6,
        "pool_map_us_per_item": pool_s / n * 1e6,
        "target_kit_us_per_item": 20.0,
    }


def speedup() -> dict[str, Any]:
    durations = [0.010] * 200
    provider = Durations(OmegaConf.create({"durations": durations}))
    local = Work(provider, parallel=PARALLEL)
    local.run(4)
    inline = Work(provider)
    inline_s = best(lambda: inline.run(200), repeats=2)
    local_s = best(lambda: local.run(200))
    return {
        "items": 200,
        "item_seconds": 0.010,
        "inline_seconds": inline_s,
        "kit_local_seconds": local_s,
        "speedup": inline_s / local_s,
        "target_speedup": 1.8,
    }


def makespan_case(client: Any, durations: list[float]) -> dict[str, Any]:
    total = sum(durations)
    provider = Durations(OmegaConf.create({"durations": durations}))
    runner = Work(provider, parallel=PARALLEL)
    runner.run(4)
    kit_s = best(lambda: runner.run(len(durations)))
    half = len(durations) // 2
    shards = [durations[:half], durations[half:]]

    def static() -> None:
        client.gather([client.submit(work_shard, shard, pure=False) for shard in shards])

    static_s = best(static)
    ideal = total / 2
    return {
        "items": len(durations),
        "total_work_seconds": total,
        "ideal_seconds": ideal,
        "kit_seconds": kit_s,
        "static_shards_seconds": static_s,
        "kit_over_ideal": kit_s / ideal,
        "static_over_ideal": static_s / ideal,
        "shard_work_seconds": [sum(s) for s in shards],
    }


def makespan(client: Any) -> dict[str, Any]:
    rng = random.Random(7)
    durations = [rng.lognormvariate(-5.5, 1.2) for _ in range(400)]  # median 4 ms
    shuffles = []
    for seed in range(SHUFFLES):
        order = list(durations)
        random.Random(seed).shuffle(order)
        shuffles.append(makespan_case(client, order))
    return {
        # Corpora are often sorted by length (speech, for batching): contiguous
        # shards then get very different amounts of work.
        "sorted": makespan_case(client, sorted(durations)),
        # In random order, how even 200-item shards come out is luck: one
        # order is one draw, so several orders are measured and averaged.
        "random": shuffles,
        "random_mean_kit_over_ideal": statistics.mean(c["kit_over_ideal"] for c in shuffles),
        "random_mean_static_over_ideal": statistics.mean(c["static_over_ideal"] for c in shuffles),
        "random_kit_wins": sum(c["kit_seconds"] < c["static_shards_seconds"] for c in shuffles),
        "target_kit_over_ideal": 1.1,
    }


def main() -> int:
    machine = describe()
    client = kit.get_session(PARALLEL).client
    results = {
        "machine": machine,
        "overhead": overhead(client),
        "speedup": speedup(),
        "makespan": makespan(client),
    }
    kit.shutdown()
    o, s, m = results["overhead"], results["speedup"], results["makespan"]
    checks = {
        "overhead <= 20 us/item": o["kit_us_per_item"] <= 20,
        "speedup >= 1.8": s["speedup"] >= 1.8,
        "makespan <= 1.1x ideal (sorted by duration)": m["sorted"]["kit_over_ideal"] <= 1.1,
        f"makespan <= 1.1x ideal (each of {SHUFFLES} random orders)": all(
            c["kit_over_ideal"] <= 1.1 for c in m["random"]
        ),
        "makespan better than static shards (sorted by duration)": m["sorted"]["kit_seconds"]
        < m["sorted"]["static_shards_seconds"],
        f"makespan better than static shards (mean of {SHUFFLES} random orders)": m[
            "random_mean_kit_over_ideal"
        ]
        < m["random_mean_static_over_ideal"],
    }
    rows = [("sorted by duration", m["sorted"])] + [
        (f"random order {seed + 1}", c) for seed, c in enumerate(m["random"])
    ]
    lines = [
        "# Engine benchmark",
        "",
        machine_line(machine, ("dask", "distributed")),
        "Command: `make bench` (best of 3 runs each).",
        "",
        "## Per-item overhead, trivial items",
        "",
        "| method | µs per item |",
        "|---|---|",
        f"| Kit, LocalCluster 2 workers, {o['items']} items | {o['kit_us_per_item']:.1f} |",
        f"| `client.map`, one task per item | {o['client_map_us_per_item']:.1f} |",
        f"| `multiprocessing.Pool.map`, chunksize 500 | {o['pool_map_us_per_item']:.1f} |",
        "",
        "## Speedup, 200 items x 10 ms CPU",
        "",
        "| method | seconds | speedup |",
        "|---|---|---|",
        f"| inline | {s['inline_seconds']:.3f} | 1.00 |",
        f"| Kit, 2 workers | {s['kit_local_seconds']:.3f} | {s['speedup']:.2f} |",
        "",
        "## Makespan, 400 items, lognormal durations (median 4 ms, sigma 1.2)",
        "",
        "| order | ideal s | Kit s (x ideal) | static shards s (x ideal) |",
        "|---|---|---|---|",
        *[
            f"| {order} | {c['ideal_seconds']:.3f} | {c['kit_seconds']:.3f} "
            f"({c['kit_over_ideal']:.3f}) | {c['static_shards_seconds']:.3f} "
            f"({c['static_over_ideal']:.3f}) |"
            for order, c in rows
        ],
        f"| mean of the {SHUFFLES} random orders | | ({m['random_mean_kit_over_ideal']:.3f}) "
        f"| ({m['random_mean_static_over_ideal']:.3f}) |",
        "",
        f"Kit beat static shards in {m['random_kit_wins']} of the {SHUFFLES} random orders.",
        "",
        "Ideal is total work / 2 workers. Static shards split the items in two contiguous"
        " halves, one task per worker (ESPnet3's way). The random orders are shuffles"
        " (seeds 0-4) of the same durations; each figure is the best of 3 runs.",
        "",
    ]
    write_results(RESULTS, "engine", results, lines, checks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
