"""``kit check``: does its forecast hold, and does it name the cause of a difference?

Forecast: for each of ten workloads, ``kit check CONFIG --items 20`` in a
process of its own, then ``kit run CONFIG`` in another (as a user runs them:
the run starts its own cluster), on the same folder; the run's own last line
sets the forecast against its wall time. Whisper and PocketSphinx on the
250-utterance generated corpus, lognormal sleeps with and without their
length as the item's cost, sorted short first, busy loops (CPU-bound),
four workers, and a cluster shared with another client's run. Targets: the
run's time inside the 80% interval in at least 8 of 10, and a median error
of at most 10%.

Parity: each of the seven causes planted in its own runner
(``tests/check/planted.py``) on one worker that sees another time zone and
language setting, and the named cause set against the planted one (target:
at least 5 of 6 of the issue's causes named); and 20 checks of a
deterministic runner, batched and not, on two workers (target: no
difference reported).

Run: ``python benchmarks/bench_check.py`` (part of ``make bench``); with
arguments, only the workloads whose names hold one of them, and no result
is written.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _cluster import remote_cluster  # noqa: E402 (found through sys.path, just above)
from _machine import describe, write_results  # noqa: E402

RESULTS = HERE / "results"
KIT = str(Path(sys.executable).with_name("kit"))
ENV = dict(os.environ, PYTHONPATH=f"{ROOT}:{HERE}")
DATA = ROOT / "runs" / "asr-data"
SAMPLE = 20
PACKAGES = ("dask", "distributed", "ctranslate2", "pocketsphinx")
CLEAN_RUNS = 20

SLEEPS = """\
provider: {_target_: check_workloads.Lengths}
runner: {_target_: check_workloads.Sleeps}
work: {count: 400, median: 0.05, sigma: 1.0, seed: 1, sorted: false}
items: {start: 0, stop: 400}
parallel: {env: local, n_workers: 2, options: {threads_per_worker: 1}}
output_dir: run
"""
BY_LENGTH = "runner._target_=check_workloads.SleepsByLength"


def count(n: int) -> list[str]:
    return [f"work.count={n}", f"items.stop={n}"]


SPINS = "runner._target_=check_workloads.Spins"
SPINS_BY_LENGTH = "runner._target_=check_workloads.SpinsByLength"

#: (name, config, overrides): the forecast's workloads.
WORKLOADS: list[tuple[str, str, list[str]]] = [
    ("Whisper tiny.en, 250 utterances", "decode", ["decoder.engine=whisper"]),
    ("PocketSphinx, 250 utterances", "decode", ["decoder.engine=pocketsphinx"]),
    ("sleeps, lognormal sigma 1, by length", "sleeps", [BY_LENGTH]),
    ("sleeps, lognormal sigma 1, no feature", "sleeps", []),
    ("sleeps, sigma 0.5, 600 items", "sleeps", ["work.sigma=0.5", *count(600)]),
    ("sleeps sorted short first, by length", "sleeps", ["work.sorted=true", BY_LENGTH]),
    ("busy loops, sigma 0.5, 150 items", "sleeps", [SPINS, "work.sigma=0.5", *count(150)]),
    ("busy loops by length, sigma 1, 150 items", "sleeps", [SPINS_BY_LENGTH, *count(150)]),
    ("sleeps on 4 workers, 800 items", "sleeps", ["parallel.n_workers=4", *count(800)]),
    ("sleeps on a cluster shared with another run", "shared", [BY_LENGTH]),
]


def kit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KIT, *args], cwd=cwd, env=ENV, capture_output=True, text=True)


@contextlib.contextmanager
def other_run(address: str, folder: Path) -> Iterator[None]:
    """Another client's run of sleeps on the shared cluster, going on until the block ends."""
    from distributed import Client

    stop = threading.Event()

    def keep_running() -> None:
        from check_workloads import Lengths, Sleeps
        from omegaconf import OmegaConf

        config = OmegaConf.create(
            {"work": {"count": 200, "median": 0.05, "sigma": 1.0, "seed": 9, "sorted": False}}
        )
        with Client(address) as client:  # type: ignore[no-untyped-call]
            runner = Sleeps(Lengths(config), client=client)
            while not stop.is_set():
                runner.run(200)

    thread = threading.Thread(target=keep_running, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=60)


def forecast_case(name: str, kind: str, overrides: list[str], folder: Path) -> dict[str, Any]:
    from kit.store._check_file import forecast_against_run

    out = folder / "run"
    config = folder / "config.yaml"
    if kind == "decode":
        from kit.examples.asr import CONFIG_PATH

        config.write_text(CONFIG_PATH.read_text())
        overrides = [*overrides, f"data.root={DATA}"]
    else:
        config.write_text(SLEEPS)
    words = [*overrides, f"output_dir={out}"]
    shared = contextlib.nullcontext((None, None))
    if kind == "shared":
        shared = remote_cluster(folder, 2, 1)  # type: ignore[assignment]
    with shared as (address, _):
        if address is not None:
            local = next(line for line in SLEEPS.splitlines() if line.startswith("parallel:"))
            remote = f"parallel: {{env: remote, address: '{address}'}}"
            config.write_text(SLEEPS.replace(local, remote))
        with other_run(address, folder) if address is not None else contextlib.nullcontext():
            checked = kit("check", str(config), *words, "--items", str(SAMPLE), cwd=folder)
            began = time.perf_counter()
            ran = kit("run", str(config), *words, cwd=folder)
            seconds = time.perf_counter() - began
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert ran.returncode == 0, ran.stdout + ran.stderr
    against = forecast_against_run(out)
    assert against is not None and against.actual is not None, ran.stdout
    return {
        "name": name,
        "low": against.low,
        "median": against.median,
        "high": against.high,
        "actual": against.actual,
        "process_seconds": seconds,
        "inside": bool(against.inside),
        "error": against.error,
        "card": checked.stdout,
    }


def parity_table() -> dict[str, Any]:
    """Each planted cause named, and false alarms on a deterministic runner."""
    from distributed import Client, LocalCluster
    from omegaconf import OmegaConf

    from kit.check import check
    from kit.check._sight import driver_threads
    from kit.launch import RunRequest
    from tests.check import planted

    def config(**values: Any) -> Any:
        return OmegaConf.create({"data": {"lang": "${oc.env:KIT_PLANT_LANG,en}"}, **values})

    def plain() -> Any:
        # Without the key the worker resolves otherwise: that one is the config case's.
        return OmegaConf.create({})

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {
            "driver_path": planted.write_planted(Path(tmp) / "a", "1.0", "one"),
            "worker_path": planted.write_planted(Path(tmp) / "b", "2.0", "two"),
        }
        with (
            LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=1,
                threads_per_worker=driver_threads(),
                host="127.0.0.1",
                dashboard_address=None,
                env={"TZ": "Asia/Tokyo", "KIT_PLANT_LANG": "fr"},
            ) as cluster,
            Client(cluster) as client,  # type: ignore[no-untyped-call]
        ):
            cases: list[tuple[str, Any, dict[str, str]]] = [
                ("nondeterminism", planted.Unseeded(planted.Plain(plain()), client=client), {}),
                (
                    "versions",
                    planted.Versioned(planted.Installed(OmegaConf.create(paths)), client=client),
                    {},
                ),
                ("config", planted.Configured(planted.Plain(config()), client=client), {}),
                ("precision", planted.Weighed(planted.Single(plain()), client=client), {}),
                (
                    "threads",
                    planted.Threaded(planted.Plain(plain()), client=client),
                    {"KIT_WORKER_THREADS": str(driver_threads() + 1)},
                ),
                ("environment", planted.Local(planted.Plain(plain()), client=client), {}),
                (
                    "batching",
                    planted.Padded(planted.Plain(plain()), client=client, batch_size=2),
                    {},
                ),
            ]
            for cause, runner, env in cases:
                saved = {key: os.environ.get(key) for key in env}
                os.environ.update(env)
                try:
                    verdict = check(RunRequest.of(runner, range(12)), n=4)
                finally:
                    for key, value in saved.items():
                        if value is None:
                            os.environ.pop(key, None)
                        else:
                            os.environ[key] = value
                rows.append(
                    {"planted": cause, "named": verdict.parity.cause, "why": verdict.parity.why}
                )
        alarms = 0
        with (
            LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster) as client,  # type: ignore[no-untyped-call]
        ):
            for seed in range(CLEAN_RUNS):
                runner = planted.Steady(planted.Plain(config()), client=client, batch_size=3)
                verdict = check(RunRequest.of(runner, range(200)), n=SAMPLE, seed=seed)
                alarms += len(verdict.parity.differences)
    named = sum(row["planted"] == row["named"] for row in rows)
    return {"causes": rows, "named": named, "clean_runs": CLEAN_RUNS, "false_alarms": alarms}


def main(only: list[str]) -> int:
    """Run every workload and the parity table; with ``only`` (names' parts), just those."""
    machine = describe(PACKAGES)
    if not (DATA / "corpus.jsonl").exists():
        from kit.examples.asr import build_corpus

        build_corpus(DATA)
    cases = []
    for name, kind, overrides in WORKLOADS:
        if only and not any(part in name for part in only):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            case = forecast_case(name, kind, overrides, Path(tmp))
        print(
            f"{name}: forecast {case['median']:.1f} s [{case['low']:.1f}, {case['high']:.1f}],"
            f" actual {case['actual']:.1f} s",
            flush=True,
        )
        cases.append(case)
    if only:
        return 0  # a look at some workloads, not a result
    parity = parity_table()
    inside = sum(case["inside"] for case in cases)
    errors = [abs(case["error"]) for case in cases]
    median_error = statistics.median(errors)
    lines = [
        "Command: `python benchmarks/bench_check.py` (in `make bench`).",
        "",
        f"The forecast: `kit check CONFIG --items {SAMPLE}`, then `kit run CONFIG`, each in a"
        " process of its own; the run's wall time against the forecast's 80% interval.",
        "",
        "| workload | forecast, s (80%) | run, s | error | inside |",
        "|---|---|---|---|---|",
    ]
    for case in cases:
        lines.append(
            f"| {case['name']} | {case['median']:.1f} ({case['low']:.1f} to {case['high']:.1f}) "
            f"| {case['actual']:.1f} | {case['error']:+.1%} | {'yes' if case['inside'] else 'NO'} |"
        )
    lines += [
        "",
        f"Inside the interval: {inside} of {len(cases)}; median error {median_error:.1%}"
        f" (largest {max(errors):.1%}).",
        "",
        "Parity: the cause planted in each runner, and the one the check named.",
        "",
        "| planted | named |",
        "|---|---|",
        *(f"| {row['planted']} | {row['named']} |" for row in parity["causes"]),
        "",
        f"{parity['named']} of {len(parity['causes'])} named; {parity['false_alarms']} differences"
        f" reported in {parity['clean_runs']} checks of a deterministic runner (batched by 3, on"
        " 2 workers, 20 of 200 items each).",
        "",
    ]
    checks = {
        f"the run inside the forecast's 80% interval in at least 8 of {len(cases)} workloads"
        f" ({inside})": inside >= 8,
        f"median forecast error at most 10% ({median_error:.1%})": median_error <= 0.10,
        f"the planted cause named in at least 5 of 6 (named {parity['named']} of"
        f" {len(parity['causes'])})": parity["named"] >= 5,
        f"no difference in {CLEAN_RUNS} clean checks ({parity['false_alarms']})": parity[
            "false_alarms"
        ]
        == 0,
    }
    write_results(
        RESULTS,
        "check",
        {"machine": machine, "forecasts": cases, "parity": parity},
        lines,
        checks,
        title="kit check: the forecast against the run, and the causes it names",
        packages=PACKAGES,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
