"""A class on one cluster against a private cluster per attendee, side by side.

Ten attendee processes (as ten notebooks' kernels) start the same job at once:
40 items of 50 ms on an env whose setup takes 5 s and holds 200 MB (a
stand-in for a recognizer's model). Today's way, each attendee's run starts a
private ``LocalCluster`` of 2 workers; the class's way, all of them run on one
``dask scheduler`` with 2 ``dask worker`` processes of 4 threads. For each:
model builds, peak memory of every process together (resident set sizes,
sampled every 0.2 s), each attendee's time to its first result and to its end,
Jain's fairness index of the attendees' throughputs, and items failed or not
run. Then on the class's cluster: a 16-item run by a connected notebook alone,
and again while another notebook's 3,200-item run holds the cluster.

Run: ``python benchmarks/bench_class.py`` (part of ``make bench``).
"""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from _cluster import ENV, HERE, remote_cluster
from _machine import describe, write_results

ATTENDEES = 10
ITEMS = 40
WORKERS, THREADS = 2, 4


def jain(values: list[float]) -> float:
    """Jain's fairness index: 1 when all are equal, 1/n when one has everything.

    >>> jain([2.0, 2.0]), jain([1.0, 0.0])
    (1.0, 0.5)
    """
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


class MemoryPeak:
    """The peak of the summed resident memory of some processes and their children."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> MemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def add(self, pid: int) -> None:
        self.roots.append(pid)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            total = 0
            for pid in list(self.roots):
                with contextlib.suppress(psutil.Error):
                    proc = psutil.Process(pid)
                    for p in [proc, *proc.children(recursive=True)]:
                        with contextlib.suppress(psutil.Error):
                            total += p.memory_info().rss
            self.peak = max(self.peak, total)


def attendee(parallel: dict[str, Any], items: int, log_dir: Path, times: int = 1) -> Any:
    command = [sys.executable, str(HERE / "class_attendee.py"), json.dumps(parallel)]
    command += [str(items), str(log_dir), str(times)]
    return subprocess.Popen(command, env=ENV, cwd=log_dir, stdout=subprocess.PIPE, text=True)


def runs_of(proc: Any) -> list[dict[str, Any]]:
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    return [json.loads(line) for line in out.splitlines()]


def a_class(parallel: dict[str, Any], log_dir: Path, cluster_pids: list[int]) -> dict[str, Any]:
    """Ten attendees start the job at once; how it went for each and for the machine."""
    with MemoryPeak(list(cluster_pids)) as memory:
        began = time.time()
        procs = []
        for _ in range(ATTENDEES):
            procs.append(attendee(parallel, ITEMS, log_dir))
            memory.add(procs[-1].pid)
        runs = [runs_of(proc)[0] for proc in procs]
        wall = time.time() - began
    ends = [run["start_wall"] - began + run["end"] for run in runs]
    firsts = [run["start_wall"] - began + (run["first"] or run["end"]) for run in runs]
    return {
        "builds": len((log_dir / "builds.log").read_text().splitlines()),
        "peak_memory_mib": memory.peak / 2**20,
        "first_result_seconds": sorted(round(x, 2) for x in firsts),
        "end_seconds": sorted(round(x, 2) for x in ends),
        "wall_seconds": wall,
        "jain": jain([ITEMS / end for end in ends]),
        "failed": sum(run["failed"] for run in runs),
        "not_run": sum(run["not_run"] for run in runs),
    }


def late_small_run(address: str, log_dir: Path) -> dict[str, Any]:
    """A connected notebook's 16-item run alone, then while another's 3,200-item run goes on."""
    from distributed import Client

    from kit.cluster._shared import list_runs

    parallel = {"env": "remote", "address": address}
    alone = runs_of(attendee(parallel, 16, log_dir, times=4))
    big = attendee(parallel, 3_200, log_dir)
    with Client(address) as client:
        while not client.run_on_scheduler(list_runs)["runs"]:
            time.sleep(0.05)
    time.sleep(1.0)  # running, its chunks out
    late = runs_of(attendee(parallel, 16, log_dir, times=4))
    big_run = runs_of(big)[0]
    alone_s = statistics.median(run["end"] for run in alone[1:])
    late_s = statistics.median(run["end"] for run in late[1:])
    return {
        "alone_seconds": [round(run["end"], 3) for run in alone],
        "late_seconds": [round(run["end"], 3) for run in late],
        "alone_median_seconds": alone_s,
        "late_median_seconds": late_s,
        "late_over_alone": late_s / alone_s,
        "big_run_seconds": big_run["end"],
        "failed": sum(run["failed"] for run in [*alone, *late, big_run]),
    }


def main() -> int:
    machine = describe()
    with tempfile.TemporaryDirectory() as tmp:
        shared_logs, private_logs, late_logs = (
            Path(tmp) / n for n in ("shared", "private", "late")
        )
        for folder in (shared_logs, private_logs, late_logs):
            folder.mkdir()
        with remote_cluster(Path(tmp), WORKERS, THREADS) as (address, pids):
            shared = a_class({"env": "remote", "address": address}, shared_logs, pids)
            late = late_small_run(address, late_logs)
        private = a_class({"env": "local", "n_workers": WORKERS}, private_logs, [])
    memory_ratio = shared["peak_memory_mib"] / private["peak_memory_mib"]
    lines = [
        "Command: `python benchmarks/bench_class.py` (in `make bench`).",
        "",
        f"{ATTENDEES} attendee processes start the same job at once: {ITEMS} items of 50 ms on"
        " an env whose setup takes 5 s and holds 200 MB.",
        "",
        "| | one class cluster | a private cluster each |",
        "|---|---|---|",
        f"| processes | scheduler + {WORKERS} workers of {THREADS} threads | {ATTENDEES} x"
        f" (scheduler + {WORKERS} workers of 1 thread) |",
        f"| model builds | {shared['builds']} | {private['builds']} |",
        f"| peak memory, all processes | {shared['peak_memory_mib']:,.0f} MiB"
        f" | {private['peak_memory_mib']:,.0f} MiB |",
        f"| first result, fastest to slowest attendee | {_span(shared['first_result_seconds'])}"
        f" | {_span(private['first_result_seconds'])} |",
        f"| end, fastest to slowest attendee | {_span(shared['end_seconds'])}"
        f" | {_span(private['end_seconds'])} |",
        f"| Jain's index of throughputs | {shared['jain']:.3f} | {private['jain']:.3f} |",
        f"| items failed or not run | {shared['failed'] + shared['not_run']}"
        f" | {private['failed'] + private['not_run']} |",
        "",
        f"Times count from the moment the {ATTENDEES} processes were started (Python and Kit"
        " imported, the cluster reached or started, the env built). Items sleep: they take a"
        " slot, not a CPU, and the private clusters have 20 slots to the class cluster's 8;"
        " their time goes to starting 30 processes and building 20 models on 2 cores.",
        "",
        "A connected notebook's 16-item run (50 ms items) on the class cluster, median of its"
        f" 2nd to 4th runs: alone {late['alone_median_seconds']:.3f} s, while another"
        f" notebook's 3,200-item run goes on {late['late_median_seconds']:.3f} s"
        f" ({late['late_over_alone']:.2f}x; each run: alone"
        f" {', '.join(f'{x:.2f}' for x in late['alone_seconds'])} s, late"
        f" {', '.join(f'{x:.2f}' for x in late['late_seconds'])} s, the first counting the"
        " connection, and alone the env's build too).",
        "",
    ]
    checks = {
        f"model builds = workers on the class cluster ({shared['builds']}; private"
        f" {private['builds']})": shared["builds"] == WORKERS,
        f"peak memory at most 1/3 of the private clusters' ({memory_ratio:.2f})": memory_ratio
        <= 1 / 3,
        f"Jain's index at least 0.9 ({shared['jain']:.3f})": shared["jain"] >= 0.9,
        f"a late 16-item run within 2x its time alone ({late['late_over_alone']:.2f}x)": late[
            "late_over_alone"
        ]
        <= 2.0,
        "no item failed or lost through another attendee": shared["failed"]
        + shared["not_run"]
        + late["failed"]
        == 0,
    }
    write_results(
        HERE / "results",
        "class",
        {"machine": machine, "shared": shared, "private": private, "late": late},
        lines,
        checks,
        title="A class on one cluster: 10 attendees, one model per worker",
        packages=("dask", "distributed"),
    )
    return 0


def _span(values: list[float]) -> str:
    return f"{values[0]:.1f} to {values[-1]:.1f} s"


if __name__ == "__main__":
    sys.exit(main())
