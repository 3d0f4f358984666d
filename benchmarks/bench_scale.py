"""How many worker threads one driver keeps busy: 256 slots on a scheduler in its own process.

A ``dask scheduler`` and 4 ``dask worker`` processes of 64 threads each (256
slots) run on 127.0.0.1, as a remote cluster would; the driver (this
process) holds no scheduler, so its CPU time per chunk is Kit's own. Items
are lognormal sleeps (median 50 ms): they take a slot, not a CPU, so 256
slots fit a 2-CPU machine. Kit, ``client.map`` (one task per item) and
static shards (one task per slot, ESPnet3's way) run the same items; each is
set against the list-scheduling bound (each item, in order, to the first
free slot, at no cost).

Run: ``python benchmarks/bench_scale.py`` (part of ``make bench``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _machine import describe, machine_line
from bench_engine import Durations, Nap, list_scheduling_bound, nap, nap_shard
from distributed import Client
from omegaconf import OmegaConf

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).with_name("dask"))
PROCESSES, THREADS = 4, 64
SLOTS = PROCESSES * THREADS
MEDIAN, SIGMA = 0.050, 1.0
TARGET = 1.05


@contextlib.contextmanager
def remote_cluster(folder: Path) -> Iterator[str]:
    """Start ``dask scheduler`` and ``dask worker`` processes; yield the scheduler's address."""
    scheduler_file = folder / "scheduler.json"
    common: dict[str, Any] = {
        "env": dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'benchmarks'}"),
        "cwd": folder,
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
    }
    host = ["--host", "127.0.0.1", "--no-dashboard"]
    procs = [
        subprocess.Popen(
            [DASK, "scheduler", "--port", "0", "--scheduler-file", str(scheduler_file), *host],
            **common,
        )
    ]
    try:
        while not scheduler_file.exists():
            time.sleep(0.1)
        procs.append(
            subprocess.Popen(
                [
                    DASK,
                    "worker",
                    "--scheduler-file",
                    str(scheduler_file),
                    "--nworkers",
                    str(PROCESSES),
                    "--nthreads",
                    str(THREADS),
                    *host,
                ],
                **common,
            )
        )
        yield json.loads(scheduler_file.read_text())["address"]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_case(address: str, durations: list[float]) -> dict[str, Any]:
    with Client(address) as client:
        client.wait_for_workers(PROCESSES)
        provider = Durations(OmegaConf.create({"durations": durations}))
        runner = Nap(provider, client=client)
        runner.run(SLOTS)  # warm: the env is on every worker
        cpu_began, began = time.process_time(), time.perf_counter()
        result = runner.run(len(durations))
        kit_s = time.perf_counter() - began
        cpu = time.process_time() - cpu_began
        assert result.stats.failed == 0, result.errors[:3]

        size = -(-len(durations) // SLOTS)
        shards = [durations[i : i + size] for i in range(0, len(durations), size)]
        began = time.perf_counter()
        client.gather([client.submit(nap_shard, shard, pure=False) for shard in shards])
        static_s = time.perf_counter() - began

        began = time.perf_counter()
        client.gather(client.map(nap, durations, pure=False))
        map_s = time.perf_counter() - began
    bound = list_scheduling_bound(durations, SLOTS)
    return {
        "items": len(durations),
        "ideal_seconds": sum(durations) / SLOTS,
        "bound_seconds": bound,
        "kit_seconds": kit_s,
        "client_map_seconds": map_s,
        "static_shards_seconds": static_s,
        "kit_over_bound": kit_s / bound,
        "client_map_over_bound": map_s / bound,
        "static_over_bound": static_s / bound,
        "chunks": result.stats.chunks,
        "driver_cpu_seconds": cpu,
        "driver_cpu_ms_per_chunk": cpu / result.stats.chunks * 1e3,
        "items_per_chunk": len(durations) / result.stats.chunks,
    }


def main() -> int:
    machine = describe()
    rng = random.Random(7)
    durations = [MEDIAN * rng.lognormvariate(0.0, SIGMA) for _ in range(20_000)]
    with tempfile.TemporaryDirectory() as tmp, remote_cluster(Path(tmp)) as address:
        case = run_case(address, durations)
    # One driver keeps N slots busy while N / (items per second a slot takes) stays
    # above its own seconds per item: slots = item seconds / (driver seconds per item).
    per_item = case["driver_cpu_seconds"] / case["items"]
    mean = sum(durations) / len(durations)
    served = mean / per_item
    ok = case["kit_over_bound"] <= TARGET
    lines = [
        "# Engine scale: 256 slots, scheduler in its own process",
        "",
        machine_line(machine, ("dask", "distributed")),
        "Command: `python benchmarks/bench_scale.py` (in `make bench`).",
        "",
        f"`dask scheduler` and `dask worker --nworkers {PROCESSES} --nthreads {THREADS}` on"
        f" 127.0.0.1 ({SLOTS} slots); {case['items']:,} items sleeping a lognormal time"
        f" (median {MEDIAN * 1e3:.0f} ms, sigma {SIGMA:g}, mean {mean * 1e3:.1f} ms).",
        "",
        "| method | seconds | x bound |",
        "|---|---|---|",
        f"| list-scheduling bound (no cost per item) | {case['bound_seconds']:.2f} | 1.000 |",
        f"| Kit | {case['kit_seconds']:.2f} | {case['kit_over_bound']:.3f} |",
        f"| `client.map`, one task per item | {case['client_map_seconds']:.2f} "
        f"| {case['client_map_over_bound']:.3f} |",
        f"| static shards, one task per slot | {case['static_shards_seconds']:.2f} "
        f"| {case['static_over_bound']:.3f} |",
        "",
        f"Ideal (total work / slots): {case['ideal_seconds']:.2f} s.",
        f"Kit sent {case['chunks']:,} chunks ({case['items_per_chunk']:.1f} items each);"
        f" the driver process used {case['driver_cpu_seconds']:.2f} s of CPU:"
        f" {case['driver_cpu_ms_per_chunk']:.2f} ms per chunk, {per_item * 1e3:.3f} ms per item.",
        f"At that cost one driver keeps about {served:,.0f} slots busy with items of"
        f" {mean * 1e3:.0f} ms (item seconds / driver seconds per item), more with longer"
        " items or larger chunks.",
        "",
        "## Target",
        "",
        f"- {'PASS' if ok else 'MISS'}: Kit within {TARGET}x of the list-scheduling bound"
        f" at {SLOTS} slots ({case['kit_over_bound']:.3f})",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scale.json").write_text(json.dumps({"machine": machine, **case}, indent=1))
    (RESULTS / "scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
