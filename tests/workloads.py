"""Providers and runners the engine tests run (importable by worker processes).

Side effects that tests count (env builds, forward calls, teardowns) are
appended as lines to files under the config's ``log_dir``, because they
happen in other processes.
"""

from __future__ import annotations

import functools
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit import ConfigError, EnvironmentProvider, Runner


def log(cfg: Any, name: str, line: str) -> None:
    with open(Path(cfg.log_dir) / name, "a") as fh:
        fh.write(line + "\n")


def reads_back(result: Any, output_dir: Path) -> None:
    """Assert that reading ``output_dir`` gives what the run said: records, counts, status.

    Every fault test ends with it: a fault may cost time, never a record that
    the run reported done, and never one the run did not.
    """
    import kit
    from kit.store._results import read_result

    for read in (read_result(output_dir), kit.attach(output_dir).result(timeout=60)):
        assert read.status == result.status, (read.status, result.status)
        assert read.records == result.records
        assert read.failed_indices == result.failed_indices
        assert (read.stats.ok, read.stats.failed) == (result.stats.ok, result.stats.failed)


def outliving(pids: list[int], seconds: float) -> list[int]:
    """Return those of ``pids`` still running after ``seconds`` (at once when all ended).

    A zombie counts as ended (see :func:`kit.cluster._process.alive`).
    """
    from kit.cluster._process import alive

    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


def lines(log_dir: Path, name: str) -> list[str]:
    path = log_dir / name
    return path.read_text().splitlines() if path.exists() else []


class Model:
    """A toy heavy object: counts its builds, can be closed."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.factor = cfg.factor
        self.closed = False

    def close(self) -> None:
        self.closed = True
        if self.cfg.get("teardown_sleep"):  # a teardown that takes a while (a model's files)
            time.sleep(self.cfg.teardown_sleep)
        if self.cfg.get("log_dir"):
            log(self.cfg, "teardown.log", f"{os.getpid()} {self.cfg.factor}")


def build_env(cfg: Any) -> dict[str, Any]:
    if cfg.get("log_dir"):
        job = os.environ.get("SLURM_JOB_ID", "-")
        log(cfg, "setup.log", f"{os.getpid()} {cfg.factor} {job}")
    if cfg.get("fail_setup"):
        raise RuntimeError("model file is corrupt")
    if cfg.get("fail_setup_silently"):
        raise MemoryError()  # no message at all
    if cfg.get("bad_setup"):
        return ["not", "a", "dict"]  # type: ignore[return-value]
    env = {"model": Model(cfg), "offset": cfg.get("offset", 0), "pid": os.getpid()}
    if cfg.get("ballast_mb"):  # a model's weights: resident, not merely reserved
        env["ballast"] = b"\x01" * (cfg.ballast_mb << 20)
    return env


class ToyProvider(EnvironmentProvider):
    def build_env_local(self) -> dict[str, Any]:
        return build_env(self.config)

    def make_worker_setup_fn(self) -> Any:
        cfg = self.config

        def setup() -> dict[str, Any]:
            return build_env(cfg)

        return setup


def build_when_released(cfg: Any) -> dict[str, Any]:
    """Hang until the file ``cfg.release`` exists (a setup stuck on a lock or a download)."""
    while not Path(cfg.release).exists():
        time.sleep(0.02)
    return build_env(cfg)


class HangingProvider(EnvironmentProvider):
    """Its setup, inline and on workers, waits for ``cfg.release`` to exist."""

    def build_env_local(self) -> dict[str, Any]:
        return build_when_released(self.config)

    def make_worker_setup_fn(self) -> Any:
        return functools.partial(build_when_released, self.config)


class EmptyEnv(EnvironmentProvider):
    """No heavy objects: for runners whose forward needs nothing."""

    def build_env_local(self) -> dict[str, Any]:
        return {}

    def make_worker_setup_fn(self) -> Any:
        return dict


class NewNameProvider(EnvironmentProvider):
    """Uses ESPnet3's newer method name."""

    def build_env_local(self) -> dict[str, Any]:
        return {"model": Model(self.config), "offset": 0}

    def build_worker_setup_fn(self) -> Any:
        cfg = self.config
        return lambda: {"model": Model(cfg), "offset": 0}


class Affine(Runner):
    @staticmethod
    def forward(idx: int, model: Model, offset: int = 0) -> dict[str, Any]:
        if model.cfg.get("fail_on") is not None and idx in model.cfg.fail_on:
            raise ValueError(f"item {idx} is broken")
        if model.cfg.get("sleep"):
            time.sleep(model.cfg.sleep)
        if model.cfg.get("gate") and idx >= model.cfg.gate_from:
            while not Path(model.cfg.gate).exists():  # held until the test opens the gate
                time.sleep(0.01)
        if model.cfg.get("log_dir") and model.cfg.get("log_calls"):
            log(model.cfg, "calls.log", str(idx))
        return {"idx": idx, "y": idx * model.factor + offset}

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        ys = [r["y"] for r in records if r is not None]
        return {"mean_y": sum(ys) / len(ys) if ys else None}


#: Set by nobody: the thread LeavesAThread starts waits for ever.
_NEVER = threading.Event()


class LeavesAThread(Affine):
    """Starts a non-daemon thread that never ends, as a library's background poller may."""

    @staticmethod
    def forward(idx: int, model: Model, offset: int = 0) -> dict[str, Any]:
        if idx == 0:
            threading.Thread(target=_NEVER.wait, name="stray-poller", daemon=False).start()
        return Affine.forward(idx, model, offset)


class Scored(Affine):
    """Affine with two metrics on scales ten times apart, as WER (0.0-0.08) and RTF (1-3)."""

    @staticmethod
    def forward(idx: int, model: Model, offset: int = 0) -> dict[str, Any]:
        record = Affine.forward(idx, model, offset)
        record["metrics"] = {"wer": (idx % 5) / 50, "rtf": 1.0 + idx % 3}
        return record


class BadSummary(Affine):
    """Every item runs; then summarize fails: an error Kit did not foresee."""

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        raise RuntimeError("the summary broke")


class WhereRan(Runner):
    @staticmethod
    def forward(idx: int, pid: int) -> dict[str, int]:
        return {"idx": idx, "env_pid": pid, "pid": os.getpid()}


class AllEnv(Runner):
    @staticmethod
    def forward(idx: int, **env: Any) -> list[str]:
        return sorted(env)


class Batched(Runner):
    @staticmethod
    def forward(idx: list[int], model: Model) -> list[int]:
        if model.cfg.get("short_batches"):
            return [i * model.factor for i in idx][:-1]
        return [i * model.factor for i in idx]


class BySize(Runner):
    """Items whose size is their index (item 13 has none); each batch is recorded with its items."""

    @staticmethod
    def forward(idx: list[int], model: Model) -> list[dict[str, Any]]:
        return [{"idx": i, "y": i * model.factor, "batch": list(idx)} for i in idx]

    @staticmethod
    def size(idx: int, model: Model) -> float:
        if idx == 13:
            raise ValueError("item 13 has no length")
        return float(idx)


class Scaled(Runner):
    @staticmethod
    def forward(idx: int, model: Model, scale: float) -> float:
        return idx * model.factor * scale


class NeedsTokenizer(Runner):
    @staticmethod
    def forward(idx: int, model: Model, tokenizer: Any) -> int:
        return idx


class Opaque:
    """A record that is not plain JSON."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.value == self.value


class OpaqueRecords(Runner):
    @staticmethod
    def forward(idx: int, model: Model) -> Opaque:
        return Opaque(idx * model.factor)


class Exits(Runner):
    """Item 2 calls sys.exit(3), item 5 os._exit(4); item 3 returns an unpicklable record."""

    @staticmethod
    def forward(idx: int) -> Any:
        if idx == 2:
            sys.exit(3)
        if idx == 5:
            os._exit(4)
        if idx == 3:
            return {"lock": threading.Lock()}
        return idx


def toy_config(tmp: Path | None = None, **values: Any) -> DictConfig:
    base: dict[str, Any] = {"factor": 2, "offset": 1}
    if tmp is not None:
        base["log_dir"] = str(tmp)
    base.update(values)
    return OmegaConf.create(base)


def expected(indices: Any, factor: int = 2, offset: int = 1) -> list[dict[str, int]]:
    return [{"idx": i, "y": i * factor + offset} for i in indices]


class Crashy(Runner):
    """Kills its worker process on the indices in ``crash_on``, as a segfault would.

    Indices in ``crash_once`` kill it only the first time (the log folder keeps count).
    """

    @staticmethod
    def forward(idx: int, model: Model) -> int:
        cfg = model.cfg
        once = idx in cfg.get("crash_once", []) and not (Path(cfg.log_dir) / "crashes.log").exists()
        if idx in cfg.get("crash_on", []) or once:
            if cfg.get("log_dir"):
                log(cfg, "crashes.log", str(idx))
            os.kill(os.getpid(), signal.SIGKILL)
        return idx * model.factor


class Sleeps(Runner):
    """Sleep ``sleeps[idx]`` seconds (an explicit keyword argument); return where it ran."""

    @staticmethod
    def forward(idx: int, pid: int, sleeps: list[float]) -> dict[str, int]:
        time.sleep(sleeps[idx])
        return {"idx": idx, "pid": os.getpid()}


class MistypedProvider(EnvironmentProvider):
    """A provider whose worker setup rejects a config value with a ConfigError."""

    def build_env_local(self) -> dict[str, Any]:
        return check_mode(self.config.mode)

    def make_worker_setup_fn(self) -> Any:
        mode = self.config.mode
        return functools.partial(check_mode, mode)


def check_mode(mode: str) -> dict[str, Any]:
    if mode not in ("lm", "grammar"):
        raise ConfigError(
            f"decoder.mode: {mode!r} is not a valid choice; did you mean 'grammar'?",
            full_key="decoder.mode",
        )
    return {"mode": mode}


class Decodes(Runner):
    """Echo the decoder mode the env was built with (the runner of MistypedProvider)."""

    @staticmethod
    def forward(idx: int, mode: str) -> dict[str, Any]:
        return {"idx": idx, "mode": mode}


class Interrupted(Runner):
    """Raises KeyboardInterrupt at ``idx == at``, as Ctrl-C inside forward does."""

    @staticmethod
    def forward(idx: int, model: Model, at: int) -> int:
        if idx == at:
            raise KeyboardInterrupt
        return idx


class Naps(Runner):
    """Sleep ``seconds`` per item; say which worker ran it."""

    @staticmethod
    def forward(idx: int, seconds: float) -> dict[str, Any]:
        from distributed import get_worker

        time.sleep(seconds)
        return {"idx": idx, "worker": str(get_worker().name)}


class IndexProvider(EnvironmentProvider):
    """An env that records which worker index and threads the plugin announced, and the
    threads a recognizer built there would take."""

    def build_env_local(self) -> dict[str, Any]:
        return {"index": -1, "dask_id": "", "threads": 0, "decoding_threads": 0}

    def make_worker_setup_fn(self) -> Any:
        return worker_identity


def worker_identity() -> dict[str, Any]:
    from kit.asr.recognizers import current_threads

    return {
        "index": int(os.environ["KIT_WORKER_INDEX"]),
        "dask_id": os.environ["DASK_WORKER_ID"],
        "threads": int(os.environ["KIT_WORKER_THREADS"]),
        "decoding_threads": current_threads(),
    }


class WhichWorker(Runner):
    @staticmethod
    def forward(
        idx: int, index: int, dask_id: str, threads: int, decoding_threads: int
    ) -> dict[str, Any]:
        from distributed import get_worker

        worker = get_worker()
        return {
            "index": index,
            "dask_id": dask_id,
            "id": worker.id,
            "threads": threads,
            "decoding_threads": decoding_threads,
            "nthreads": worker.state.nthreads,
        }


class LoggedSleeps(Runner):
    """Sleep ``sleeps[idx]`` seconds, log the call to ``calls.log``; return where it ran."""

    @staticmethod
    def forward(idx: int, model: Model, sleeps: list[float]) -> dict[str, int]:
        log(model.cfg, "calls.log", str(idx))
        time.sleep(sleeps[idx])
        return {"idx": idx, "pid": os.getpid()}


class WaitsForTheNext(Runner):
    """Item ``slow`` waits (up to a minute) for item ``slow + 1`` to have run; others take 2 ms.

    Its record says whether it saw the next item run: it can only if the
    items behind it in its chunk are handed back while it still runs.
    """

    @staticmethod
    def forward(idx: int, model: Model, slow: int) -> dict[str, Any]:
        marker = Path(model.cfg.log_dir) / f"ran-{slow + 1}"
        if idx == slow:
            deadline = time.monotonic() + 60
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return {"idx": idx, "saw_the_next_run": marker.exists()}
        if idx == slow + 1:
            marker.touch()
        time.sleep(0.002)
        return {"idx": idx}


class AllAtOnce(Runner):
    """Each item waits (up to a minute) until ``together`` items have begun.

    Its record says whether they all had: they can only if that many slots
    ran items at once.
    """

    @staticmethod
    def forward(idx: int, model: Model, together: int) -> dict[str, Any]:
        folder = Path(model.cfg.log_dir)
        (folder / f"began-{idx}").touch()
        deadline = time.monotonic() + 60
        while len(list(folder.glob("began-*"))) < together and time.monotonic() < deadline:
            time.sleep(0.01)
        return {"idx": idx, "all_began": len(list(folder.glob("began-*"))) >= together}


def env_var(name: str) -> str | None:
    """For ``client.run``: an environment variable of the worker process."""
    return os.environ.get(name)


def mark_then_sleep(marker: str, seconds: float) -> None:
    """A task that says it runs (``marker`` appears), then holds its thread."""
    Path(marker).touch()
    time.sleep(seconds)


def sampling(dask_worker: Any = None, dask_scheduler: Any = None) -> tuple[Any, float]:
    """For ``client.run`` or ``run_on_scheduler``: its profiler setting and tick interval (s)."""
    import dask.config

    server = dask_worker if dask_worker is not None else dask_scheduler
    return dask.config.get("distributed.worker.profile.enabled"), server._tick_interval


class Tripwire:
    """Unpickling it leaves a file behind: proof that code from the directory ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (Path.touch, (Path(self.marker),))


class Padded(Runner):
    """Records of about 2 kB, so a few hundred fill a small disk."""

    @staticmethod
    def forward(idx: int) -> dict[str, Any]:
        return {"idx": idx, "pad": "x" * 2000}

    @staticmethod
    def expected(indices: Any) -> list[dict[str, Any]]:
        return [{"idx": i, "pad": "x" * 2000} for i in indices]


def numpy_record(idx: int) -> Any:
    """Item ``idx``'s record: one of the numpy kinds that must come back as they went in."""
    import numpy as np

    table = np.array(
        [(idx, 2.5, "ab"), (3, 4.0, "cd")], dtype=[("n", "<i4"), ("x", "<f8"), ("s", "<U2")]
    )
    kinds = [
        table,
        table[0],
        table.view(np.recarray),
        np.ma.masked_array([idx, 2, 3], mask=[0, 1, 0], fill_value=7),
        np.asmatrix([[idx, 2], [3, 4]]),
        np.array([idx, 2], dtype=">i2"),
        np.zeros(2, dtype=[("v", "<f4", (2,)), ("inner", [("z", "<i2")])]),
    ]
    return {"value": kinds[idx % len(kinds)]}


class NumpyKinds(Runner):
    @staticmethod
    def forward(idx: int) -> Any:
        return numpy_record(idx)


class BadRecords(Runner):
    """Item 1 holds itself, item 2 nests 400 deep, item 3 reports a metric of 10**400."""

    @staticmethod
    def forward(idx: int) -> Any:
        if idx == 1:
            loop: list[Any] = [idx]
            loop.append(loop)
            return loop
        if idx == 2:
            deep: list[Any] = [idx]
            for _ in range(400):
                deep = [deep]
            return deep
        if idx == 3:
            return {"metrics": {"huge": 10**400, "wer": 0.5}}
        return {"metrics": {"wer": 0.5}}


class ManyMetrics(Runner):
    """Each item reports a metric named after itself (what the name bound is for)."""

    @staticmethod
    def forward(idx: int) -> Any:
        return {"metrics": {f"item-{idx}": 1.0, "wer": 0.5}}


class Escapes(Runner):
    """Item 1 fails with a message full of terminal escapes (a retitle, a colour, a bell)."""

    @staticmethod
    def forward(idx: int) -> Any:
        if idx == 1:
            raise ValueError("\x1b]0;pwned\x07\x1b[31mred\x9b2J\x1b[2K")
        return {"note": "\x1b[1mbold"}


def same(a: Any, b: Any) -> bool:
    """Equal values of the same type, dtype (field names too), mask and subclass."""
    import numpy as np

    if isinstance(a, np.ma.MaskedArray):
        return (
            type(b) is type(a)
            and same(a.data, b.data)
            and np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b))
            and a.fill_value == b.fill_value
        )
    if isinstance(a, (np.ndarray, np.generic)):
        return (
            type(b) is type(a)
            and a.dtype == b.dtype
            and a.dtype.names == b.dtype.names
            and a.shape == b.shape
            and a.tobytes() == b.tobytes()
        )
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


class KeyedProvider(ToyProvider):
    """Builds its env from ``factor`` alone: runs whose configs differ elsewhere share it."""

    env_keys = ("factor", "log_dir")


class Paced(ToyProvider):
    """Builds its env from ``factor``, how items behave (sleep, gate) and how long its
    teardown takes: a class's engines."""

    env_keys = (
        "factor",
        "sleep",
        "teardown_sleep",
        "log_dir",
        "log_calls",
        "gate",
        "gate_from",
        "ballast_mb",
        "fail_on",
    )


class Peeking(ToyProvider):
    """Declares ``factor`` alone but reads ``offset`` while building: a stale env in waiting."""

    env_keys = ("factor",)

    def build_env_local(self) -> dict[str, Any]:
        return {"model": self.config.offset}

    def make_worker_setup_fn(self) -> Any:
        cfg = self.config
        return functools.partial(getattr, cfg, "offset")


class Shifted(Runner):
    """Reads what varies between runs sharing one env from the run's own config."""

    @staticmethod
    def forward(idx: int, model: Model, config: DictConfig) -> dict[str, Any]:
        began = time.time()
        time.sleep(config.get("sleep", 0))
        if config.get("log_calls"):
            log(config, f"calls-{config.offset}.log", str(idx))
        # A trial held at item 8 until the test opens the gate (a file): cancelled mid-run.
        if config.get("gate") and config.offset == config.gate_offset and idx >= 8:
            while not Path(config.gate).exists():
                time.sleep(0.01)
        return {
            "idx": idx,
            "y": idx * model.factor + config.offset,
            "pid": os.getpid(),
            "began": began,
            "ended": time.time(),
        }


class Quadratic(Runner):
    """A search's toy objective: ``loss`` is ``(x - 0.3)**2`` plus a little per item."""

    @staticmethod
    def forward(idx: int, model: Model, config: DictConfig) -> dict[str, Any]:
        time.sleep(config.get("sleep", 0))
        x = float(config.x)
        return {
            "idx": idx,
            "y": idx * model.factor,
            "metrics": {"loss": round((x - 0.3) ** 2 + 0.01 * (idx % 3), 6)},
        }


class Graded(Runner):
    """Shifted with a running metric (``err``) and a summary: what the trackers plot."""

    @staticmethod
    def forward(idx: int, model: Model, config: DictConfig) -> dict[str, Any]:
        record: dict[str, Any] = Shifted.forward(idx, model, config)
        record["metrics"] = {"err": (idx % 4) / 4}
        return record

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        ys = [r["y"] for r in records]
        return {"mean_y": sum(ys) / len(ys), "engine": "toy"}


def hungry_env(megabytes: int) -> dict[str, Any]:
    """An env holding ``megabytes`` of memory, written (so the process really holds it)."""
    return {"blob": b"x" * (megabytes * 2**20)}


class Hungry(EnvironmentProvider):
    """Builds an env of ``size_mb`` megabytes: past a worker's memory limit, its nanny kills it."""

    env_keys = ("size_mb", "tag")

    def build_env_local(self) -> dict[str, Any]:
        return hungry_env(int(self.config.size_mb))

    def make_worker_setup_fn(self) -> Any:
        return functools.partial(hungry_env, int(self.config.size_mb))


def dying_env(how: str) -> dict[str, Any]:
    """End this process while building: ``exit`` (os._exit(3)) or ``segfault`` (SIGSEGV)."""
    if how == "exit":
        os._exit(3)
    os.kill(os.getpid(), signal.SIGSEGV)
    return {}


class Dying(EnvironmentProvider):
    """Its worker setup ends the worker process (``how``): a crash, not memory."""

    def build_env_local(self) -> dict[str, Any]:
        return {"blob": b""}

    def make_worker_setup_fn(self) -> Any:
        return functools.partial(dying_env, str(self.config.how))


def picky_env(log_dir: str, fail_on: int, times: int) -> dict[str, Any]:
    """Fail the first ``times`` builds on worker ``fail_on`` (-1: every time); log each build."""
    index = int(os.environ.get("KIT_WORKER_INDEX", "-1"))
    tried = Path(log_dir, f"builds-{index}.log")
    with tried.open("a") as out:
        out.write(f"{os.getpid()}\n")
    if index == fail_on and (times < 0 or len(tried.read_text().splitlines()) <= times):
        raise RuntimeError(f"the model file is locked on worker {index}")
    return {"where": index}


class Picky(EnvironmentProvider):
    """Its env fails to build on one worker (``fail_on``), the first ``times`` times."""

    def build_env_local(self) -> dict[str, Any]:
        return {"where": -1}

    def make_worker_setup_fn(self) -> Any:
        cfg = self.config
        return functools.partial(picky_env, str(cfg.log_dir), int(cfg.fail_on), int(cfg.times))


class Where(Runner):
    """Says which worker ran each item."""

    @staticmethod
    def forward(idx: int, where: int) -> dict[str, Any]:
        time.sleep(0.01)
        return {"idx": idx, "where": where}


class Sized(Runner):
    """Reports the size of a :class:`Hungry` env's blob."""

    @staticmethod
    def forward(idx: int, blob: bytes) -> dict[str, Any]:
        time.sleep(0.02)
        return {"idx": idx, "size": len(blob)}


class ConfigScored(Quadratic):
    """Quadratic whose ``summarize`` reads its own runner's config: ``score`` is its ``x``."""

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        return {"score": float(self.provider.config.x)}


class Errs(Runner):
    """A per-item error in [0, 1]: the item's own difficulty, less the run's ``gain``, plus noise.

    Trials of one sweep share each item's difficulty (as systems share an
    utterance's) and differ by ``gain``: a stop-when-decided sweep's workload.
    """

    @staticmethod
    def forward(idx: int, model: Model, config: DictConfig) -> dict[str, Any]:
        # An item takes time, as decoding does: the inline engine commits (and announces)
        # chunks of quicker items in batches, by when a decided trial has nothing to save.
        time.sleep(float(config.get("sleep", 0)))
        difficulty = random.Random(idx).betavariate(2, 5)
        noise = random.Random(f"{idx}-{config.noise}").gauss(0, 0.15)
        err = min(1.0, max(0.0, difficulty - float(config.gain) + noise))
        return {"idx": idx, "metrics": {"err": err}}
