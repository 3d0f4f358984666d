"""Kit's engine side by side with plain Dask and multiprocessing (``make bench``).

1. Per-item overhead on trivial items: Kit (LocalCluster, 2 workers) vs one
   ``client.map`` task per item vs ``multiprocessing.Pool.map`` (chunksize 500).
2. Speedup on 200 items of 10 ms CPU work: Kit on 2 workers vs inline.
3. Makespan on 400 items with lognormal durations: Kit's dynamic chunks vs
   static one-shard-per-worker (ESPnet3's way) vs the ideal (total work / 2).
4. Elastic: 2,000 items x 20 ms sleep that start on 1 worker while the
   cluster is scaled to 8: Kit vs static shards vs one ``client.map`` task
   per item, against the capacity-time ideal computed from the join times.
5. Many workers: 16 and 32 single-thread workers, 4,000 and 16,000 items of
   lognormal sleeps (median 20 ms, sigma 1): Kit vs static shards vs ideal
   and vs the no-overhead list-scheduling bound, with the driver's CPU
   seconds per chunk.
6. ``Runner.submit`` latency in a cold process (the cluster starts meanwhile).

Results are printed and written to benchmarks/results/engine.json (the manual's
performance page is made from it).
"""

from __future__ import annotations

import heapq
import json
import multiprocessing
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import kit
from kit import EnvironmentProvider, Runner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results

RESULTS = Path(__file__).resolve().parent / "results"
PARALLEL = {"env": "local", "n_workers": 2}
REPEATS = 3
SHUFFLES = 5
#: Kit's overhead per trivial item, at most (µs).
OVERHEAD_TARGET_US = 3.0


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
        "target_kit_us_per_item": OVERHEAD_TARGET_US,
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


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def nap_shard(durations: list[float]) -> float:
    for seconds in durations:
        time.sleep(seconds)
    return sum(durations)


class Nap(Runner):
    @staticmethod
    def forward(idx: int, durations: list[float]) -> float:
        time.sleep(durations[idx])
        return durations[idx]


def ideal_makespan(work: float, joins: list[float]) -> float:
    """Shortest time in which workers joining at ``joins`` (s) do ``work`` seconds."""
    joins = sorted(max(0.0, t) for t in joins)
    low, high = 0.0, joins[-1] + work
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if sum(max(0.0, mid - t) for t in joins) < work else (low, mid)
    return high


def join_times(client: Any, since: float) -> list[float]:
    return [
        when - since
        for when, msg in client.get_events("all")
        if isinstance(msg, dict) and msg.get("action") == "add-worker"
    ]


def elastic_case(method: str, durations: list[float], final_workers: int) -> dict[str, Any]:
    """Start on 1 worker, scale to ``final_workers`` as the work starts."""
    parallel = {"env": "local", "n_workers": 1, "options": {"name": f"elastic-{method}"}}
    session = kit.get_session(parallel)
    client, cluster = session.client, session.cluster
    try:
        if method == "kit":
            provider = Durations(OmegaConf.create({"durations": durations}))
            began = threading.Event()
            marks: dict[str, float] = {}

            def watch(event: Any) -> None:
                if type(event).__name__ == "RunStarted":
                    marks["start"] = event.started
                    began.set()
                elif type(event).__name__ == "RunFinished":
                    marks["end"] = marks["start"] + event.elapsed

            handle = Nap(provider, parallel=parallel).submit(len(durations), on_event=watch)
            began.wait()
            cluster.scale(final_workers)
            handle.result()
            start, elapsed = marks["start"], marks["end"] - marks["start"]
        else:
            start = time.time()
            if method == "static shards":
                size = -(-len(durations) // final_workers)
                shards = [durations[i : i + size] for i in range(0, len(durations), size)]
                futures = [client.submit(nap_shard, shard, pure=False) for shard in shards]
            else:
                futures = client.map(nap, durations, pure=False)
            cluster.scale(final_workers)
            client.gather(futures)
            elapsed = time.time() - start
        joins = join_times(client, start)
        ideal = ideal_makespan(sum(durations), joins)
        return {
            "method": method,
            "seconds": elapsed,
            "ideal_seconds": ideal,
            "over_ideal": elapsed / ideal,
            "join_seconds": sorted(max(0.0, t) for t in joins),
        }
    finally:
        session.close()


def elastic() -> dict[str, Any]:
    durations = [0.020] * 2000
    cases = [elastic_case(m, durations, 8) for m in ("kit", "static shards", "client.map")]
    return {
        "items": 2000,
        "item_seconds": 0.020,
        "workers": [1, 8],
        "cases": cases,
        "target_kit_over_ideal": 1.15,
    }


# The many-workers target (1.10x ideal) is checked where the no-overhead bound
# leaves at least 5% for round trips; at 32 workers x 4,000 items it is 1.09x.
BOUND_LEAVES_ROOM = 1.05


def list_scheduling_bound(durations: list[float], n_workers: int) -> float:
    """Makespan of handing items out in order, without knowing their durations.

    Each item, in order, goes to the worker that frees up first, with no
    overhead at all (no chunks, no round trips). A long item near the end
    sets the makespan, whoever schedules.
    """
    free = [0.0] * n_workers
    for seconds in durations:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def many_workers_case(n_workers: int, durations: list[float]) -> dict[str, Any]:
    parallel = {"env": "local", "n_workers": n_workers, "options": {"name": f"many-{n_workers}"}}
    session = kit.get_session(parallel)
    client = session.client
    try:
        client.wait_for_workers(n_workers)
        provider = Durations(OmegaConf.create({"durations": durations}))
        runner = Nap(provider, parallel=parallel)
        runner.run(n_workers * 2)  # warm: env built on every worker
        cpu_began = time.process_time()
        wall_began = time.perf_counter()
        result = runner.run(len(durations))
        kit_s = time.perf_counter() - wall_began
        cpu = time.process_time() - cpu_began
        size = -(-len(durations) // n_workers)
        shards = [durations[i : i + size] for i in range(0, len(durations), size)]
        began = time.perf_counter()
        client.gather([client.submit(nap_shard, shard, pure=False) for shard in shards])
        static_s = time.perf_counter() - began
    finally:
        session.close()
    ideal = max(sum(durations) / n_workers, max(durations))
    bound = list_scheduling_bound(durations, n_workers)
    return {
        "workers": n_workers,
        "items": len(durations),
        "ideal_seconds": ideal,
        "bound_over_ideal": bound / ideal,
        "kit_seconds": kit_s,
        "static_shards_seconds": static_s,
        "kit_over_ideal": kit_s / ideal,
        "static_over_ideal": static_s / ideal,
        "chunks": result.stats.chunks,
        # LocalCluster's scheduler runs in this process: its CPU is counted too.
        "driver_cpu_ms_per_chunk": cpu / result.stats.chunks * 1e3,
    }


def many_workers() -> dict[str, Any]:
    cases = []
    # 4,000 items: about 4 s at 32 workers, where one late 0.6 s item is 15% of the run.
    # 16,000 items: the same items four times over, a run long enough for the ratio to
    # say how the engine keeps up rather than where the longest item fell.
    for n_items in (4_000, 16_000):
        rng = random.Random(11)
        durations = [0.020 * rng.lognormvariate(0.0, 1.0) for _ in range(n_items)]
        cases += [many_workers_case(n, durations) for n in (16, 32)]
    return {
        "item_median_seconds": 0.020,
        "sigma": 1.0,
        "cases": cases,
        "target_kit_over_ideal": 1.10,
    }


SUBMIT_SCRIPT = """
import json, time
t0 = time.perf_counter()
import kit
from bench_engine import Durations, Trivial
imported = time.perf_counter() - t0
from omegaconf import OmegaConf
if __name__ == "__main__":
    runner = Trivial(Durations(OmegaConf.create({"durations": []})),
                     parallel={"env": "local", "n_workers": 2})
    began = time.perf_counter()
    handle = runner.submit(100)
    latency = time.perf_counter() - began
    status = str(handle.status)
    handle.result()
    ready = time.perf_counter() - began
    print(json.dumps({"import": imported, "submit": latency, "status": status, "done": ready}))
    kit.shutdown()
"""


def submit_latency() -> dict[str, Any]:
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", SUBMIT_SCRIPT],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return {
        "runs": runs,
        "submit_ms_max": max(r["submit"] for r in runs) * 1e3,
        "submit_ms_median": statistics.median(r["submit"] for r in runs) * 1e3,
        "import_ms_median": statistics.median(r["import"] for r in runs) * 1e3,
        "done_s_median": statistics.median(r["done"] for r in runs),
        "target_submit_ms": 100.0,
    }


def stored_chunks() -> dict[str, Any]:
    """Milliseconds per item of an inline run into an output folder, 1,000 trivial items.

    With ``chunk_size: 1`` every item is a chunk of its own, stored before it
    counts as done; chunks finishing within 50 ms of each other share one
    commit (one wait for the folder and one for the ledger), each still in a
    file of its own.
    """
    import tempfile

    provider = Durations(OmegaConf.create({"durations": []}))
    out: dict[str, Any] = {"items": 1000}
    for label, size in (("one_item", 1), ("auto", "auto")):

        def run(size: Any = size) -> None:
            with tempfile.TemporaryDirectory() as tmp:
                runner = Trivial(
                    provider, parallel={"env": "inline"}, chunk_size=size, output_dir=tmp
                )
                runner.run(range(out["items"]))

        out[f"{label}_ms_per_item"] = round(best(run) / out["items"] * 1000, 3)
    return out


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
    results["elastic"] = elastic()
    results["many_workers"] = many_workers()
    results["submit"] = submit_latency()
    results["stored"] = stored_chunks()
    o, s, m = results["overhead"], results["speedup"], results["makespan"]
    e, w, sub = results["elastic"], results["many_workers"], results["submit"]
    st = results["stored"]
    kit_elastic = e["cases"][0]
    checks = {
        f"overhead <= {OVERHEAD_TARGET_US:g} us/item (multiprocessing.Pool: "
        f"{o['pool_map_us_per_item']:.1f})": o["kit_us_per_item"] <= OVERHEAD_TARGET_US,
        "speedup >= 1.85": s["speedup"] >= 1.85,
        "elastic 1 -> 8 workers: Kit <= 1.15x capacity-time ideal": kit_elastic["over_ideal"]
        <= 1.15,
        **{
            f"{c['workers']} workers, {c['items']:,} items: Kit <= 1.10x ideal": c["kit_over_ideal"]
            <= 1.10
            for c in w["cases"]
            if c["bound_over_ideal"] <= BOUND_LEAVES_ROOM
        },
        **{
            f"{c['workers']} workers, {c['items']:,} items: Kit ahead of static shards": c[
                "kit_seconds"
            ]
            < c["static_shards_seconds"]
            for c in w["cases"]
        },
        "submit() returns in < 100 ms in a cold process (max of 5)": sub["submit_ms_max"] < 100,
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
    title, packages = "Engine benchmark", ("dask", "distributed")
    lines = [
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
        "## Stored runs: inline, 1,000 trivial items into an output folder",
        "",
        "| chunk_size | ms per item |",
        "|---|---|",
        f"| 1 (each item stored before it counts as done) | {st['one_item_ms_per_item']:.3f} |",
        f"| auto | {st['auto_ms_per_item']:.3f} |",
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
        "## Elastic: 2,000 items x 20 ms sleep, 1 worker scaled to 8 as the work starts",
        "",
        "| method | seconds | capacity-time ideal s | x ideal |",
        "|---|---|---|---|",
        *[
            f"| {c['method']} | {c['seconds']:.2f} | {c['ideal_seconds']:.2f} "
            f"| {c['over_ideal']:.3f} |"
            for c in e["cases"]
        ],
        "",
        "The ideal is the shortest time in which the workers, each from the moment it"
        " joined (read from the scheduler's events), could do the total work. Static shards"
        " are cut for the 8 workers asked for (one task each), as ESPnet3 cuts them.",
        "Workers joined after (s): "
        + ", ".join(f"{t:.2f}" for t in kit_elastic["join_seconds"])
        + " (Kit's run).",
        "",
        "## Many workers: lognormal sleeps (median 20 ms, sigma 1)",
        "",
        "| workers | items | ideal s | no-overhead bound (x ideal) | Kit s (x ideal) "
        "| static shards s (x ideal) | chunks | driver CPU ms per chunk |",
        "|---|---|---|---|---|---|---|---|",
        *[
            f"| {c['workers']} | {c['items']:,} | {c['ideal_seconds']:.2f} "
            f"| {c['bound_over_ideal']:.3f} | {c['kit_seconds']:.2f} "
            f"({c['kit_over_ideal']:.3f}) | {c['static_shards_seconds']:.2f} "
            f"({c['static_over_ideal']:.3f}) | {c['chunks']} "
            f"| {c['driver_cpu_ms_per_chunk']:.1f} |"
            for c in w["cases"]
        ],
        "",
        "Single-thread worker processes; the ideal is total work / workers. The"
        " no-overhead bound is list scheduling with zero cost per item (each item, in"
        " order, to the first free worker), the best a scheduler that hands items out in"
        " order without knowing their durations can do, so a target"
        " below it cannot be met on that row. The 1.10x target is checked on the rows"
        f" whose bound is at most {BOUND_LEAVES_ROOM:.2f}x (room for a real engine's round"
        " trips); the other rows are reported against their bound. Driver CPU includes"
        " the LocalCluster scheduler, which runs in the driver's process.",
        "",
        "## `Runner.submit` in a cold process (5 fresh processes)",
        "",
        f"submit() returned in {sub['submit_ms_median']:.1f} ms (median), "
        f"{sub['submit_ms_max']:.1f} ms (max), with status `starting`; `import kit` took "
        f"{sub['import_ms_median']:.0f} ms; the 100-item run, cluster start included, was"
        f" done after {sub['done_s_median']:.2f} s.",
        "",
    ]
    write_results(RESULTS, "engine", results, lines, checks, title=title, packages=packages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
