"""Reliability under faults and attacks: what is lost, duplicated, executed or signalled.

Rows, each a number of trials on real processes:

- worker SIGKILL: a LocalCluster worker killed mid-run (200 items);
- driver SIGKILL + resume: the process running ``Runner.run`` killed, then resumed;
- commit crash: a driver killed at random points of its chunk commits (one-item chunks);
- killing item: one item of 20 that SIGKILLs its worker (as a native crash
  would) and one that calls ``os._exit``, on a 2-worker LocalCluster;
- CLI fuzz: the corpus of bad inputs of tests/test_cli_fuzz.py, every case;
- tampering: edited and dropped-in chunk files, a foreign job.pkl, driver.json
  naming pid 1, -1, an unrelated process and another host;
- shared directory: what a writer of a run directory tries on its reader: a
  manifest switched to pickle with a chunk and ledger line of theirs (read
  with attach, iteration and resume), links planted where Kit writes (each
  name, resumed and started over), a forged driver.json naming a process
  of the user while a run holds the lock, and one others may change;
- lost scheduler: a remote scheduler (the ``dask scheduler`` program) SIGKILLed
  mid-run: the run must end (not hang) with the completed chunks kept, and a
  resume against a new scheduler must finish it;
- other version: a resume after ``run(..., scale=)`` changed, or ``forward``
  edited under the same class name, must be refused (a mix counts as lost);
- shared sweep folder: what a writer of a sweep's folder tries on its owner
  (trials named outside it, linked, with planted overrides or values outside
  the space, or made by other code), the owner's sweep repeated;
- tracker down: a sweep exporting to an MLflow server nobody runs;
- trial isolation: a sweep whose two trials build envs that kill their
  workers (past the memory limit) beside two trials whose envs are empty;
- disk full: a real 1 MiB tmpfs filled to leave 1-48 pages free at two byte
  offsets (every point the run can fail at, mid ledger line included), then
  freed and resumed; what the run reports, what reading it back gives and
  what ``kit status`` counts must all agree.

Columns: items lost, items duplicated (run again after they were stored, or
stored twice, or reported done but not read back), code executed from the
directory, processes wrongly signalled, files outside the run destroyed or
changed, Python tracebacks shown to the user, hangs, and worker deaths
beyond ``retries + 3`` for a killing item. Target: all zero.
Results go to benchmarks/results/reliability.json (the manual's performance page is made from it).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import pickle
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import describe, write_results  # noqa: E402

import kit  # noqa: E402
from kit import attach  # noqa: E402
from kit.detached._run import load_job  # noqa: E402
from kit.errors import StoreError  # noqa: E402
from kit.store._results import read_result  # noqa: E402
from tests.workloads import Affine, ToyProvider, Tripwire, expected, toy_config  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
COLUMNS = (
    "trials",
    "lost",
    "duplicated",
    "executed",
    "signalled",
    "destroyed",
    "tracebacks",
    "hangs",
    "excess deaths",
)


def row(**counts: int) -> dict[str, int]:
    return {name: counts.get(name.replace(" ", "_"), 0) for name in COLUMNS}


def calls(logs: Path) -> Counter[int]:
    path = logs / "calls.log"
    return Counter(int(x) for x in path.read_text().split()) if path.exists() else Counter()


def tally(result: Any, n: int, logs: Path, stored_before: set[int]) -> tuple[int, int]:
    """(lost, duplicated) of a finished run: records missing, and stored items run again."""
    lost = sum(a != b for a, b in zip(result.records, expected(range(n)), strict=True))
    counted = calls(logs)
    again = sum(1 for i in stored_before if counted[i] > 1)
    return lost, again


def committed_positions(out: Path) -> set[int]:
    ledger = out / "ledger.jsonl"
    if not ledger.exists():
        return set()
    done: set[int] = set()
    for line in ledger.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError):
            entry = json.loads(line)
            done.update(range(entry["start"], entry["stop"]))
    return done


def worker_sigkill(trials: int) -> dict[str, int]:
    lost = duplicated = hangs = 0
    for trial in range(trials):
        parallel = {"env": "local", "n_workers": 2, "options": {"name": f"kill{trial}"}}
        session = kit.get_session(parallel)
        with tempfile.TemporaryDirectory() as tmp:
            logs = Path(tmp)
            cfg = toy_config(logs, sleep=0.01, log_calls=True)
            runner = Affine(ToyProvider(cfg), parallel=parallel, chunk_size=5)
            handle = runner.submit(range(200))
            while handle.progress.done < 40:
                time.sleep(0.01)
            pids = session.client.run(os.getpid)
            os.kill(next(iter(pids.values())), signal.SIGKILL)
            try:
                result = handle.result(timeout=120)
            except TimeoutError:
                hangs += 1
                continue
            finally:
                session.close()
            lost += sum(a != b for a, b in zip(result.records, expected(range(200)), strict=True))
            # Chunks in flight on the killed worker run again: that is not a duplicate
            # record. A record stored twice would be, and positions make it impossible.
            duplicated += len(result.records) - len(set(range(len(result.records))))
    return row(trials=trials, lost=lost, duplicated=duplicated, hangs=hangs)


def killing_item(trials: int, how: str) -> dict[str, int]:
    """One item of 20 kills its worker: it alone fails, within ``retries + 3`` deaths."""
    from tests.workloads import Crashy, Exits

    lost = excess = hangs = 0
    retries = 2
    for trial in range(trials):
        parallel = {"env": "local", "n_workers": 2, "options": {"name": f"{how}{trial}"}}
        session = kit.get_session(parallel)
        with tempfile.TemporaryDirectory() as tmp:
            logs = Path(tmp)
            if how == "sigkill":
                cfg = toy_config(logs, crash_on=[7])
                runner: Any = Crashy(ToyProvider(cfg), parallel=parallel, retries=retries)
                want = [None if i == 7 else 2 * i for i in range(20)]
            else:
                runner = Exits(ToyProvider(toy_config()), parallel=parallel, retries=retries)
                want = [None if i in (2, 3, 5) else i for i in range(20)]
            handle = runner.submit(range(20))
            try:
                result = handle.result(timeout=120)
            except TimeoutError:
                hangs += 1
                handle.cancel()
                continue
            finally:
                session.close()
            lost += sum(a != b for a, b in zip(result.records, want, strict=True))
            deaths = len((logs / "crashes.log").read_text().split()) if how == "sigkill" else 0
            excess += max(0, deaths - (retries + 3))
    return row(trials=trials, lost=lost, hangs=hangs, excess_deaths=excess)


KILLED_DRIVER = """
import sys
sys.path.insert(0, {root!r})
from tests.workloads import Affine, ToyProvider, toy_config
cfg = toy_config({logs!r}, sleep=0.005, log_calls=True)
Affine(ToyProvider(cfg), output_dir={out!r}, chunk_size=5).run(range(300))
"""


def driver_sigkill(trials: int, rng: random.Random) -> dict[str, int]:
    lost = duplicated = hangs = 0
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as tmp:
            out, logs = Path(tmp) / "run", Path(tmp) / "logs"
            logs.mkdir()
            script = KILLED_DRIVER.format(root=str(ROOT), logs=str(logs), out=str(out))
            proc = subprocess.Popen([sys.executable, "-c", script])
            deadline = time.monotonic() + 60
            while not (out / "ledger.jsonl").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.0))
            proc.kill()
            proc.wait()
            stored = committed_positions(out)
            cfg = toy_config(logs, sleep=0.005, log_calls=True)
            began = time.monotonic()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a chunk file the kill left uncommitted
                result = Affine(ToyProvider(cfg), output_dir=out, chunk_size=5).run(range(300))
            kit.shutdown()  # the inline env of this trial goes with its folder
            hangs += time.monotonic() - began > 120
            a, b = tally(result, 300, logs, stored)
            lost, duplicated = lost + a, duplicated + b
    return row(trials=trials, lost=lost, duplicated=duplicated, hangs=hangs)


def commit_crash(trials: int, rng: random.Random) -> dict[str, int]:
    lost = duplicated = 0
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as tmp:
            out, logs = Path(tmp) / "run", Path(tmp) / "logs"
            logs.mkdir()
            cfg = toy_config(logs, log_calls=True)
            pid = os.fork()
            if pid == 0:
                try:
                    Affine(ToyProvider(cfg), output_dir=out, chunk_size=1).run(range(60))
                finally:
                    os._exit(0)
            while not (out / "ledger.jsonl").exists():
                time.sleep(0.001)
            time.sleep(rng.uniform(0.0, 0.03))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            stored = committed_positions(out)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a chunk file the kill left uncommitted
                result = Affine(ToyProvider(cfg), output_dir=out, chunk_size=1).run(range(60))
            kit.shutdown()
            a, b = tally(result, 60, logs, stored)
            lost, duplicated = lost + a, duplicated + b
    return row(trials=trials, lost=lost, duplicated=duplicated)


def cli_fuzz(folder: Path) -> dict[str, int]:
    from kit.cli import main
    from tests import test_cli_fuzz as fuzz

    folder.mkdir(parents=True)
    paths: list[Path] = []
    for name, text in fuzz.TEXTS.items():
        path = folder / f"{name}.yaml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        paths.append(path)
    (folder / "self_including.yaml").write_text("defaults:\n  - self_including\n")
    (folder / "dir.yaml").mkdir()
    os.mkfifo(folder / "pipe.yaml")
    paths += [folder / "dir.yaml", folder / "pipe.yaml", folder / "missing.yaml"]
    cases = tracebacks = hangs = 0
    for path, command, override in itertools.product(paths, fuzz.COMMANDS, fuzz.OVERRIDES):
        extra = [override] if override else []
        if command == ["run"]:
            extra.append("+parallel.env=inline")
        err = io.StringIO()
        began = time.monotonic()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code: Any = main([*command, str(path), *extra])
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            code = "raised"
        cases += 1
        tracebacks += code not in (0, 1, 2) or "Traceback" in err.getvalue()
        hangs += time.monotonic() - began > 10
    return row(trials=cases, tracebacks=tracebacks, hangs=hangs)


def tampering(folder: Path) -> dict[str, int]:
    folder.mkdir(parents=True)
    marker = folder / "executed"
    trials = signalled = 0
    for fmt in ("data", "pickle"):
        out = folder / f"run-{fmt}"
        Affine(ToyProvider(toy_config()), output_dir=out, record_format=fmt).run(range(4))
        (out / "chunks" / "0000000004-0000000005.pkl").write_bytes(
            pickle.dumps(Tripwire(str(marker)))
        )
        first = sorted((out / "chunks").glob("0000000000-*"))[0]
        if fmt == "pickle":
            first.write_bytes(pickle.dumps(Tripwire(str(marker))))
        else:
            first.write_text(first.read_text().replace('"y": 1', '"y": 2'))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # StoreWarnings name each tampered file
            Affine(ToyProvider(toy_config()), output_dir=out, record_format=fmt).run(range(4))
            with contextlib.suppress(StoreError):
                kit.attach(out).result()  # a pickle run is refused unless allowed
            kit.attach(out, allow_pickle=fmt == "pickle").result()
        trials += 2
    job = folder / "job.pkl"
    job.write_bytes(pickle.dumps(Tripwire(str(marker))))
    job.chmod(0o666)
    with contextlib.suppress(StoreError):
        load_job(job)
    trials += 1
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    host = socket.gethostname()
    for driver in (
        {"pid": 1, "host": host, "created": 0.0},
        {"pid": -1, "host": host, "created": 0.0},
        {"pid": bystander.pid, "host": host, "created": 1.0},
        {"pid": bystander.pid, "host": "elsewhere", "created": 1.0},
    ):
        run_dir = folder / f"driver-{trials}"
        run_dir.mkdir()
        (run_dir / "driver.json").write_text(json.dumps(driver))
        with contextlib.suppress(StoreError):
            attach(run_dir).cancel(timeout=1)
        trials += 1
    signalled += bystander.poll() is not None
    bystander.kill()
    bystander.wait()
    return row(trials=trials, executed=int(marker.exists()), signalled=signalled)


def shared_directory(folder: Path) -> dict[str, int]:
    from kit._base.errors import KitError
    from tests.test_shared_dir import plant_pickle

    folder.mkdir(parents=True)
    marker = folder / "executed"
    trials = signalled = destroyed = 0
    out = folder / "pickled"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    plant_pickle(out, marker)
    for read in (
        lambda: kit.attach(out).result(),
        lambda: list(kit.attach(out)),
        lambda: Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10)),
    ):
        with contextlib.suppress(StoreError):
            read()
        trials += 1
    for name in (
        ".lock",
        "events.jsonl",
        "ledger.jsonl",
        "errors.jsonl",
        "manifest.json",
        "result.json",
        "status.json",
        "config.yaml",
        "chunks",
    ):
        for resume in (True, False):
            out = folder / f"link-{trials}"
            Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
            victim = folder / f"victim-{trials}"
            victim.write_text("precious")
            link = out / name
            if link.is_dir():
                import shutil

                shutil.rmtree(link)
            link.unlink(missing_ok=True)
            link.symlink_to(victim)
            runner = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5, resume=resume)
            with contextlib.suppress(KitError), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runner.run(range(10))
            destroyed += victim.read_text() != "precious"
            trials += 1
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    import psutil

    for mode in (0o644, 0o666):
        out = folder / f"forged-{trials}"
        out.mkdir()
        driver = {
            "pid": bystander.pid,
            "host": socket.gethostname(),
            "created": psutil.Process(bystander.pid).create_time(),
        }
        (out / "driver.json").write_text(json.dumps(driver))
        (out / "driver.json").chmod(mode)
        live = kit.store.RunStore(out)
        live.lock()
        with contextlib.suppress(StoreError):
            attach(out).cancel(timeout=1)
        live.unlock()
        trials += 1
    signalled += bystander.poll() is not None
    bystander.kill()
    bystander.wait()
    return row(
        trials=trials, executed=int(marker.exists()), signalled=signalled, destroyed=destroyed
    )


def disk_full(folder: Path) -> dict[str, int]:
    """Fill a real tmpfs so the run fails at each point it can, then free it and resume."""
    if os.getuid() != 0:
        return row()  # mounting a tmpfs needs root (CI runs as root)
    folder.mkdir(parents=True)
    trials = lost = duplicated = 0
    for pages in range(1, 49):
        for offset in (0, 2048):
            mount = folder / f"disk-{trials}"
            mount.mkdir()
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True
            )
            try:
                stats = os.statvfs(mount)
                free = stats.f_bavail * stats.f_frsize
                (mount / "filler").write_bytes(b"\0" * (free - pages * 4096 - offset))
                out = mount / "run"
                with contextlib.suppress(StoreError, OSError), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(300))
                (mount / "filler").unlink()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(
                        range(300)
                    )
                    back = read_result(out)
                want = expected(range(300))
                lost += sum(a != b for a, b in zip(again.records, want, strict=True))
                lost += sum(a != b for a, b in zip(back.records, want, strict=True))
                lost += back.status != "completed"
                lost += 300 - int(attach(out).status().get("done", 0))
                duplicated += max(0, len(committed_lines(out)) - len(set(committed_lines(out))))
            finally:
                subprocess.run(["umount", "-l", str(mount)], check=False)
            trials += 1
    return row(trials=trials, lost=lost, duplicated=duplicated)


def recovery_cost(trials: int) -> dict[str, float]:
    """Wall time of 400 x 10 ms items in chunks of 50 on 2 workers, with one worker SIGKILLed.

    The lost chunks are sent again in pieces spread over the workers while
    the run goes on. What the kill costs beyond the run without it is
    compared with one chunk's time (0.5 s) plus the capacity missing while
    the killed worker's nanny starts it again (its restart time over the 2
    workers), which no recovery can win back.
    """
    chunk_seconds = 50 * 0.01
    times: dict[bool, list[float]] = {False: [], True: []}
    restarts: list[float] = []
    for kill in (False, True):
        for trial in range(trials):
            parallel = {"env": "local", "n_workers": 2, "options": {"name": f"cost{trial}{kill}"}}
            session = kit.get_session(parallel)
            session.wait_for_workers(2)
            runner = Affine(ToyProvider(toy_config(sleep=0.01)), parallel=parallel, chunk_size=50)
            runner.run(range(4))  # the env is built: only the run is timed
            began = time.perf_counter()
            handle = runner.submit(range(400))
            if kill:
                while handle.progress.done < 100:
                    time.sleep(0.005)
                victim = next(iter(session.client.run(os.getpid).items()))
                os.kill(victim[1], signal.SIGKILL)
                killed_at = time.perf_counter()
                while victim[0] in session.client.nthreads():
                    time.sleep(0.005)
                while len(session.client.nthreads()) < 2:
                    time.sleep(0.005)
                restarts.append(time.perf_counter() - killed_at)
            handle.result(timeout=300)
            times[kill].append(time.perf_counter() - began)
            session.close()
    base, killed = (sum(times[k]) / trials for k in (False, True))
    restart = sum(restarts) / trials
    return {
        "seconds": round(base, 3),
        "seconds_with_kill": round(killed, 3),
        "ratio": round(killed / base, 3),
        "excess_seconds": round(killed - base, 3),
        "chunk_seconds": chunk_seconds,
        "restart_seconds": round(restart, 3),
        "excess_in_chunks": round((killed - base - restart / 2) / chunk_seconds, 2),
    }


def lost_scheduler(folder: Path, trials: int) -> dict[str, int]:
    import psutil

    from kit.events import ChunkFinished
    from tests.servers import dask_cluster

    lost = hangs = duplicated = 0
    for trial in range(trials):
        out = folder / f"run-{trial}"
        config = toy_config(sleep=0.1, log_dir=str(folder / f"logs-{trial}"), log_calls=True)
        first, second = folder / f"first-{trial}", folder / f"second-{trial}"
        for made in (first, second, Path(config.log_dir)):
            made.mkdir(parents=True)
        with dask_cluster(first) as address:
            scheduler = next(
                p
                for p in psutil.process_iter(["cmdline"])
                if str(first / "scheduler.json") in (p.info["cmdline"] or [])
                and "scheduler" in (p.info["cmdline"] or [])
            )

            def kill(event: object, scheduler: Any = scheduler) -> None:
                if isinstance(event, ChunkFinished) and event.done >= 6 and scheduler.is_running():
                    scheduler.send_signal(signal.SIGKILL)

            parallel = {"env": "remote", "address": address, "startup_timeout": 10}
            runner = Affine(ToyProvider(config), parallel=parallel, output_dir=out, chunk_size=3)
            handle = runner.submit(range(60), on_event=kill)
            try:
                handle.result(timeout=120)
            except TimeoutError:
                hangs += 1
                handle.cancel()
            except ConnectionError:
                pass
        stored = committed_positions(out)
        with dask_cluster(second) as address:
            parallel = {"env": "remote", "address": address}
            result = Affine(
                ToyProvider(config), parallel=parallel, output_dir=out, chunk_size=3
            ).run(range(60))
        lost += sum(a != b for a, b in zip(result.records, expected(range(60)), strict=True))
        counted = calls(Path(config.log_dir))
        duplicated += sum(1 for i in stored if counted[i] > 1)
    return row(trials=trials, lost=lost, duplicated=duplicated, hangs=hangs)


def other_version(folder: Path) -> dict[str, int]:
    from tests.test_version import Affine2
    from tests.workloads import Scaled

    lost = 0
    out = folder / "keywords"
    Scaled(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10), scale=1.0)
    with contextlib.suppress(StoreError):
        Scaled(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10), scale=2.0)
        lost += 1  # accepted: records of both versions mixed
    out = folder / "code"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    edited = type("Affine", (kit.Runner,), {"forward": Affine2.__dict__["forward"]})
    edited.__module__, edited.__qualname__ = Affine.__module__, Affine.__qualname__
    with contextlib.suppress(StoreError):
        edited(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
        lost += 1
    return row(trials=2, lost=lost)


def shared_sweep_folder(folder: Path) -> dict[str, int]:
    """A co-user's plants in a finished grid's or search's folder, the owner's sweep repeated.

    Each case of tests/test_sweep_trust.py: a trial named ``../victim``, a trial
    folder linked elsewhere, an override planted in a trial, a trial added
    outside the space, a stored value moved outside it; and a finished trial
    whose stored code differs. Executed: a planted override ran (the trial's
    env wrote into the victim's folder); destroyed: anything outside the
    folder changed; lost: another code's results read back as the owner's.
    """
    from tests.test_sweep_trust import CASES, config, run_sweep

    executed = destroyed = lost = tracebacks = 0
    for n, (kind, plant, _said) in enumerate(CASES):
        base = folder / str(n)
        victim = base / "victim"
        victim.mkdir(parents=True)
        cfg = config(base)
        run_sweep(kind, cfg, base / "sweep")
        plant(base / "sweep", victim)
        try:
            run_sweep(kind, cfg, base / "sweep")
        except kit.KitError:
            pass  # refused, naming the trial and the field: what should happen
        except Exception:
            tracebacks += 1
        found = sorted(p.name for p in victim.iterdir())
        executed += "setup.log" in found
        destroyed += bool(found)
    for n, kind in enumerate(("grid", "search")):
        base = folder / f"code-{n}"
        base.mkdir()
        cfg = config(base)
        run_sweep(kind, cfg, base / "sweep")
        manifest = base / "sweep" / "trial-001" / "manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "forward_code": "x"}))
        with contextlib.suppress(kit.KitError):
            run_sweep(kind, cfg, base / "sweep")
            lost += 1  # read back: another code's records taken as this code's
    return row(
        trials=len(CASES) + 2,
        executed=executed,
        destroyed=destroyed,
        lost=lost,
        tracebacks=tracebacks,
    )


def tracker_outage(folder: Path) -> dict[str, int]:
    """A 3-trial sweep exporting to an MLflow server nobody runs: said at once, nothing waits.

    Hangs: a trial's end that waited out the tracker (the "still being
    written" warning); lost: items not in the trials' folders.
    """
    from tests.servers import free_port

    down = f"http://127.0.0.1:{free_port()}"
    config = {
        "provider": {"_target_": "tests.workloads.ToyProvider"},
        "runner": {"_target_": "tests.workloads.Affine"},
        "items": {"stop": 20},
        "factor": 2,
        "offset": 0,
        "parallel": {"env": "inline"},
        "tracking": {"mlflow": down},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = kit.sweep(config, ["offset=0,1,2"], output_dir=folder)
    waited = sum("was still being written" in str(w.message) for w in caught)
    lost = sum(20 - (r.stats.ok if r is not None else 0) for r in result.results)
    return row(trials=3, hangs=waited, lost=lost)


def trial_isolation(folder: Path) -> dict[str, int]:
    """Sibling trials on one 300 MB-worker cluster: two envs of 1.5 GB kill their workers.

    Lost: items of the two sibling trials (envs of nothing) that did not run.
    """
    from tests.test_trial_isolation import config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kit.sweep(
            config(), ["size_mb=0,1500", "tag=a,b"], output_dir=folder, concurrency=4
        )
    siblings = [
        r for t, r in zip(result.trials, result.results, strict=True) if "size_mb=0" in t.overrides
    ]
    lost = sum(24 - (r.stats.ok if r is not None else 0) for r in siblings)
    return row(trials=2, lost=lost)


def committed_lines(out: Path) -> list[str]:
    """The chunk files the ledger names, one per line (a name twice is a chunk stored twice)."""
    names = []
    for line in (out / "ledger.jsonl").read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            names.append(json.loads(line)["file"])
    return names


def main() -> int:
    machine = describe(("dask", "distributed"))
    rng = random.Random(15)
    with tempfile.TemporaryDirectory() as tmp:
        rows = {
            "worker SIGKILL (LocalCluster, 200 items)": worker_sigkill(10),
            "driver SIGKILL + resume (300 items)": driver_sigkill(10, rng),
            "commit crash + resume (60 one-item chunks)": commit_crash(20, rng),
            "killing item, SIGKILL (1 of 20, 2 workers)": killing_item(5, "sigkill"),
            "killing item, os._exit (1 of 20, 2 workers)": killing_item(5, "os_exit"),
            "CLI fuzz cases": cli_fuzz(Path(tmp) / "fuzz"),
            "tampering cases": tampering(Path(tmp) / "tamper"),
            "shared directory attacks": shared_directory(Path(tmp) / "shared"),
            "lost scheduler (remote, SIGKILL mid-run) + resume": lost_scheduler(
                Path(tmp) / "scheduler", 3
            ),
            "resume by another version (keywords, code)": other_version(Path(tmp) / "version"),
            "disk full, real tmpfs (96 fill levels)": disk_full(Path(tmp) / "full"),
            "shared sweep folder attacks (grid and search)": shared_sweep_folder(
                Path(tmp) / "sweeps"
            ),
            "tracker down (MLflow server nobody runs, 3 trials)": tracker_outage(
                Path(tmp) / "tracker"
            ),
            "trial isolation (sibling envs killing their workers)": trial_isolation(
                Path(tmp) / "isolation"
            ),
        }
        cost = recovery_cost(3)
    kit.shutdown()
    total = {c: sum(r[c] for r in rows.values()) for c in COLUMNS if c != "trials"}
    title, packages = "Reliability benchmark", ("dask", "distributed")
    lines = [
        "Command: `make bench` (or `python benchmarks/reliability.py`).",
        "",
        "| case | " + " | ".join(COLUMNS) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
        *(f"| {name} | {' | '.join(str(r[c]) for c in COLUMNS)} |" for name, r in rows.items()),
        "",
        f"One worker SIGKILLed mid-run (400 x 10 ms items, chunks of 50, 2 workers, mean of 3): "
        f"{cost['seconds_with_kill']} s against {cost['seconds']} s without ({cost['ratio']}x): "
        f"{cost['excess_seconds']} s more, of which {cost['restart_seconds'] / 2:.3f} s is the "
        f"capacity missing while the killed worker restarts ({cost['restart_seconds']} s over "
        f"2 workers); the rest is {cost['excess_in_chunks']} chunk times "
        f"({cost['chunk_seconds']} s each).",
        "",
    ]
    checks = {f"{column}: 0 in every row": count == 0 for column, count in total.items()}
    checks["one worker death costs at most about one chunk's time beyond its restart"] = (
        cost["excess_in_chunks"] <= 1.5
    )
    write_results(
        RESULTS,
        "reliability",
        {"machine": machine, "rows": rows, "recovery": cost},
        lines,
        checks,
        title=title,
        packages=packages,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
