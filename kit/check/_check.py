"""The check before scaling out: run a spread sample three ways, compare, forecast, verdict."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import resource
import textwrap
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit._base.differences import Difference
from kit._base.errors import UnsafeFileError
from kit._engine.inject import ForwardSpec
from kit.check._forecast import Forecast, finite, forecast
from kit.check._parity import Parity, compare, judge
from kit.check._sight import Sight, see, used_packages, versus, worker_sight
from kit.cluster import get_session
from kit.cluster._shared import list_runs
from kit.config import ParallelConfig
from kit.events import ChunkFinished, Event
from kit.launch import RunRequest, run
from kit.result import Index, RunResult
from kit.task import Task

#: Items a check takes when not told.
ITEMS = 20
#: Problems with the data listed one by one at most; the rest are counted.
LISTED = 10


def spread(indices: Sequence[Index], n: int, seed: int = 0) -> list[Index]:
    """Pick ``n`` items spread over the whole set: one at random from each of ``n`` equal strata.

    Examples
    --------
    >>> spread(range(100), 4, seed=1) == spread(range(100), 4, seed=1)
    True
    >>> [i // 25 for i in spread(range(100), 4)]  # one from each quarter
    [0, 1, 2, 3]
    >>> spread(["a", "b"], 5)
    ['a', 'b']
    """
    items = list(indices)
    if n >= len(items):
        return items
    rng = random.Random(seed)
    bounds = [round(k * len(items) / n) for k in range(n + 1)]
    return [items[rng.randrange(lo, hi)] for lo, hi in itertools.pairwise(bounds)]


@dataclass(frozen=True)
class Memory:
    """Peak memory of a worker over the check, against the target's limit per worker."""

    peak_bytes_per_worker: int
    limit_bytes: int | None

    @property
    def fits(self) -> bool:
        """False when the peak passes the limit."""
        return self.limit_bytes is None or self.peak_bytes_per_worker <= self.limit_bytes

    def __str__(self) -> str:
        peak = _bytes(self.peak_bytes_per_worker)
        if self.limit_bytes is None:
            return f"{peak} a worker at most (no limit set)"
        verdict = "fits" if self.fits else "will not fit"
        return f"{verdict}: {peak} a worker, limit {_bytes(self.limit_bytes)}"

    def to_dict(self) -> dict[str, Any]:
        """Return it as plain data (``--json``'s ``memory``)."""
        return {
            "peak_bytes_per_worker": self.peak_bytes_per_worker,
            "limit_bytes": self.limit_bytes,
            "fits": self.fits,
        }


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.3g} GB"  # pragma: no cover


@dataclass(frozen=True)
class DataCheck:
    """The whole set, checked: items with problems, and the sample's share of it."""

    items: int
    problems: tuple[str, ...]
    problem_count: int
    sample_share: float | None
    feature: str | None

    @property
    def ok(self) -> bool:
        """True when no item has a problem."""
        return self.problem_count == 0

    def __str__(self) -> str:
        share = (
            f"; the sample is {self.sample_share:.1%} of the set's {self.feature}"
            if self.sample_share is not None
            else ""
        )
        if self.ok:
            return f"{self.items} items checked, no problem{share}"
        more = self.problem_count - len(self.problems)
        listed = "; ".join(self.problems) + (f"; and {more} more" if more > 0 else "")
        return f"{self.problem_count} of {self.items} items have problems: {listed}{share}"

    def to_dict(self) -> dict[str, Any]:
        """Return it as plain data (``--json``'s ``data``)."""
        return {
            "items": self.items,
            "ok": self.ok,
            "problems": list(self.problems),
            "problem_count": self.problem_count,
            "sample_share": self.sample_share,
            "feature": self.feature,
        }


@dataclass(frozen=True)
class CheckResult:
    """The check's verdict: parity, its cause, the forecast, memory, the data, the sample's scores.

    ``ok`` is parity's (and the data's: an item that cannot run fails it).
    :meth:`card` is what the terminal and the notebook show; :meth:`to_dict`
    is ``kit check --json``'s file.
    """

    sample: tuple[Index, ...]
    parity: Parity
    forecast: Forecast | None
    memory: Memory | None
    data: DataCheck | None
    summary: dict[str, Any] = field(default_factory=dict)
    sights: dict[str, Any] = field(default_factory=dict)
    ways: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every way agreed and no item of the set has a problem."""
        return self.parity.ok and (self.data is None or self.data.ok)

    def card(self, width: int = 100) -> str:
        """Return the verdict as text: one line a part, then the differences (at most 10)."""
        lines = [
            f"kit check: {'PASS' if self.ok else 'FAIL'} on {len(self.sample)} items "
            f"({', '.join(self.ways)})",
        ]
        if self.parity.ok:
            lines.append(f"  parity    the same records every way ({_compared(self.parity)})")
        else:
            lines.append(
                f"  parity    {len(self.parity.differences)} differences; "
                f"likely cause: {self.parity.cause}"
            )
            lines.append(f"            {self.parity.why}")
        if self.summary:
            lines.append(f"  sample    {_scores(self.summary)}")
        if self.forecast is not None:
            lines.append(f"  forecast  {self.forecast}")
        if self.memory is not None:
            lines.append(f"  memory    {self.memory}")
        if self.data is not None:
            lines.append(f"  data      {self.data}")
        for difference in self.parity.differences[:10]:
            lines.append(f"    - {difference}")
        if len(self.parity.differences) > 10:
            lines.append(f"    ... and {len(self.parity.differences) - 10} more (--json has all)")
        wrapped = []
        for line in lines:
            indent = " " * (len(line) - len(line.lstrip()) + (10 if line.startswith("  ") else 0))
            wrapped += textwrap.wrap(line, width, subsequent_indent=indent) or [line]
        return "\n".join(wrapped)

    def to_dict(self) -> dict[str, Any]:
        """Return the verdict as plain data: the ``--json`` file's content."""
        return {
            "ok": self.ok,
            "sample": list(self.sample),
            "ways": self.ways,
            "parity": self.parity.to_dict(),
            "forecast": None if self.forecast is None else self.forecast.to_dict(),
            "memory": None if self.memory is None else self.memory.to_dict(),
            "data": None if self.data is None else self.data.to_dict(),
            "summary": {k: _plain(v) for k, v in self.summary.items()},
            "sights": self.sights,
        }


def _compared(parity: Parity) -> str:
    return ", ".join(f"{ways}: {n}" for ways, n in parity.compared.items())


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"[{_value(value[0])}, {_value(value[1])}]"
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value


def _scores(summary: Mapping[str, Any]) -> str:
    """``wer 0.104 (95%: 0.0337 to 0.185), rtf 0.166``: a ``NAME_95`` interval beside NAME."""
    parts = []
    for key, value in summary.items():
        if key.endswith("_95") and key[:-3] in summary:
            continue
        bounds = summary.get(f"{key}_95")
        ci = f" (95%: {_value(bounds[0])} to {_value(bounds[1])})" if bounds else ""
        parts.append(f"{key} {_value(value)}{ci}")
    return ", ".join(parts)


# ------------------------------------------------------------------ running


def _one_at_a_time(request: RunRequest) -> Any:
    """Return the runner's options with items one at a time, one a chunk, failures recorded."""
    return dataclasses.replace(
        request.options,
        batch_size=None,
        batch_by=None,
        max_batch=None,
        chunk_size=1,
        on_error="record",
        max_failures=None,
        resume=False,
    )


class _Times:
    """Collects each item's seconds of work from a run's chunks (one item a chunk)."""

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self.chunks = 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, ChunkFinished):
            self.chunks += 1
            if event.items == 1:
                self.seconds[event.start] = event.busy_seconds


def _run(request: RunRequest, on_event: Callable[[Event], None] | None = None) -> RunResult:
    return run(request.replace(output_dir=None, tracking=None, draws_report=False), on_event)


def _worker_sights(client: Any, config: Any, packages: set[str]) -> list[Sight]:
    found = client.run(worker_sight, config, packages)
    return [Sight(**found[address]) for address in sorted(found)]


def _peak_rss(dask_worker: Any = None) -> tuple[int, int | None]:
    """Return this process's peak resident memory (bytes) and its worker's memory limit."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    manager = getattr(dask_worker, "memory_manager", None)
    limit = getattr(manager, "memory_limit", None)
    return peak, int(limit) if limit else None


def target_limit(parallel: ParallelConfig) -> int | None:
    """Return the memory a worker of ``parallel`` may use (its options), or None when unset.

    Examples
    --------
    >>> target_limit(ParallelConfig(env="slurm", options={"memory": "4GB", "processes": 2}))
    2000000000
    >>> target_limit(ParallelConfig(env="local", options={"memory_limit": "1GB"}))
    1000000000
    >>> target_limit(ParallelConfig(env="local")) is None
    True
    """
    from dask.utils import parse_bytes

    options = parallel.options
    if options.get("memory_limit") not in (None, "auto", 0):
        value = options["memory_limit"]
        return int(parse_bytes(value) if isinstance(value, str) else value)
    if options.get("memory"):
        value = options["memory"]
        total = parse_bytes(value) if isinstance(value, str) else int(value)
        return int(total // max(1, int(options.get("processes") or 1)))
    return None


def target_slots(parallel: ParallelConfig, measured: int | None) -> int:
    """Return ``parallel``'s task slots: as measured when the check ran there, else its options'.

    Examples
    --------
    >>> target_slots(ParallelConfig(env="slurm", n_workers=4, options={"cores": 8}), None)
    32
    >>> target_slots(ParallelConfig(env="local", n_workers=2), 2)
    2
    """
    if measured:
        return measured
    options = parallel.options
    per = options.get("threads_per_worker")
    if per is None and options.get("cores"):
        per = int(options["cores"]) // max(1, int(options.get("processes") or 1))
    return parallel.n_workers * max(1, int(per or 1))


def _features(task: Task, indices: Sequence[Index], env: Mapping[str, Any]) -> list[float] | None:
    """Return each item's cost feature (``duration``) by the runner's method, or None."""
    function = task.cost
    if not callable(function):
        return None
    spec = ForwardSpec.of(function, f"{task.owner}.{task.cost_by}")
    kwargs = spec.kwargs(env, {})
    values = [function(index, **kwargs) for index in indices]
    return [float(v) for v in values] if finite(values) else None


@dataclass
class _Ran:
    """The check's runs of its sample, and the per-item times of the one that forecasts."""

    reference: RunResult
    again: RunResult
    worker: RunResult
    batched: RunResult | None
    times: _Times
    ways: dict[str, str]


def _run_ways(request: RunRequest, sample: list[Index], say: Callable[[str], None]) -> _Ran:
    """Run the sample here (twice), on the workers one at a time, and batched as configured."""
    single = _one_at_a_time(request)
    base = request.replace(items=sample, options=single)
    inline = base.replace(parallel=ParallelConfig(env="inline"), client=None)
    on_cluster = _on_cluster(request)
    # The times forecast the run from where it runs: the workers, or inline this process.
    times = _Times()
    say(f"reference: {len(sample)} items in this process, one at a time")
    reference = worker = _run(inline, None if on_cluster else times)
    say("reference again, to see it gives the same records")
    again = _run(inline)
    ways = {"reference": "in this process, one at a time", "again": "the reference again"}
    if on_cluster:
        say("on the cluster's workers, one at a time")
        worker = _run(base, times)
        ways["worker"] = "on the workers, one at a time"
    options = request.options
    batched = None
    if options.batch_size is not None or options.batch_by is not None:
        say("batched as configured")
        as_configured = dataclasses.replace(
            options, on_error="record", max_failures=None, resume=False
        )
        batched = _run(base.replace(options=as_configured))
        ways["batched"] = "batched as configured"
    return _Ran(reference, again, worker, batched, times, ways)


def _on_cluster(request: RunRequest) -> bool:
    return request.client is not None or request.parallel.env != "inline"


def _parity(
    ran: _Ran, seen: Mapping[str, Sequence[str]], rtol: float, ignore: Sequence[str]
) -> Parity:
    """Compare the ways pair by pair; name the likely cause of what differs."""
    pairs: dict[str, int] = {}
    found_again, pairs["reference vs again"] = compare(
        ran.reference, ran.again, ("reference", "again"), rtol=rtol, ignore=ignore
    )
    found_worker: list[Difference] = []
    if "worker" in ran.ways:
        found_worker, pairs["reference vs worker"] = compare(
            ran.reference, ran.worker, ("reference", "worker"), rtol=rtol, ignore=ignore
        )
    found_batched: list[Difference] = []
    if ran.batched is not None:
        found_batched, pairs["worker vs batched"] = compare(
            ran.worker, ran.batched, ("worker", "batched"), rtol=rtol, ignore=ignore
        )
    return judge(found_again, found_worker, found_batched, seen, pairs)


@dataclass
class _Seen:
    """What the driver and the workers see, what differs, their memory, and the cluster's slots."""

    differs: dict[str, list[str]] = field(default_factory=dict)
    sights: dict[str, Any] = field(default_factory=dict)
    peak: int = 0
    limit: int | None = None
    slots: int = 1
    others: int = 0


def _look(client: Any, request: RunRequest, env: Mapping[str, Any]) -> _Seen:
    """Compare what each worker sees with what the driver does; read memory and slots."""
    if client is None:
        peak, limit = _peak_rss()
        return _Seen(peak=peak, limit=limit)
    config = request.config
    packages = used_packages(request.task, request.provider, env)
    workers = _worker_sights(client, config, packages)
    driver = see(config, packages)
    differs: dict[str, list[str]] = {}
    for sight in workers:
        for cause, lines in versus(driver, sight).items():
            differs.setdefault(cause, []).extend(lines)
    memory = client.run(_peak_rss)
    limits = [limit for _, limit in memory.values() if limit]
    return _Seen(
        differs,
        {"driver": driver.to_dict(), "workers": [s.to_dict() for s in workers]},
        max(peak for peak, _ in memory.values()),
        min(limits) if limits else None,
        sum(s.threads for s in workers),
        # Runs of other clients there now: the run will get its fair share beside them.
        len(client.run_on_scheduler(list_runs)["runs"]),
    )


def _check_data(
    request: RunRequest, sample: list[Index], env: Mapping[str, Any]
) -> tuple[DataCheck, list[float] | None, list[float] | None]:
    """Check every item of the set; return it with the sample's and the set's cost features."""
    task = request.task
    feature = task.cost_by
    all_features = _features(task, request.items, env)
    problems = list(task.check_items(request.items, env))
    sample_features = None
    share = None
    if all_features is not None:
        where = {index: pos for pos, index in enumerate(request.items)}
        sample_features = [all_features[where[index]] for index in sample]
        total = sum(all_features)
        share = round(sum(sample_features) / total, 4) if total else None
    data = DataCheck(
        len(request.items),
        tuple(problems[:LISTED]),
        len(problems),
        share,
        feature if share is not None else None,
    )
    return data, sample_features, all_features


def check(
    request: RunRequest,
    *,
    n: int = ITEMS,
    seed: int = 0,
    rtol: float | None = None,
    ignore: Sequence[str] | None = None,
    target: ParallelConfig | None = None,
    on_step: Callable[[str], None] | None = None,
) -> CheckResult:
    """Check ``request``'s run on a spread sample before running it in full.

    ``n`` items, spread over the whole set (seeded), run four times: in this
    process one at a time (the reference) and again; on the configured
    cluster one at a time; and batched as configured (when the runner
    batches). Every record field is compared (``rtol`` for numbers, ``ignore``
    for fields that may differ: both default to the runner's
    ``check_rtol`` and ``check_ignore``); a difference is put down to its
    likely cause. The workers' per-item times forecast the full run on
    ``target`` (default: ``request.parallel``); every item of the set is
    checked with the runner's :meth:`~kit.Runner.check_items`. With an
    ``output_dir``, the verdict is kept there (``check.json``, that file only)
    for the run's report to set against the run.

    Examples
    --------
    >>> from kit.examples.quickstart import Evaluate, ModelProvider, quickstart_config
    >>> config = quickstart_config(["model.work_seconds=0", "parallel.env=inline"])
    >>> runner = Evaluate(ModelProvider(config), parallel=config.parallel)
    >>> verdict = check(RunRequest.of(runner, 100), n=5)
    >>> verdict.ok, verdict.parity.cause, verdict.forecast.items
    (True, None, 100)
    """
    say = on_step or (lambda _: None)
    task = request.task
    rtol = float(task.check_rtol if rtol is None else rtol)
    ignore = tuple(task.check_ignore if ignore is None else ignore)
    sample = spread(request.items, n, seed)
    ran = _run_ways(request, sample, say)
    say("comparing what the driver and the workers see")
    env = _local_env(request)  # the reference's, built once in this process
    seen = _look(_client(request) if _on_cluster(request) else None, request, env)
    parity = _parity(ran, seen.differs, rtol, ignore)
    say("checking every item of the set")
    data, sample_features, all_features = _check_data(request, sample, env)
    # On another cluster, who else will be there is not known; its slots are its options'.
    others = seen.others if target is None else 0
    measured = seen.slots if target is None else None
    the_forecast = _forecast(
        ran,
        sample,
        target or request.parallel,
        measured,
        request.options,
        len(request.items),
        (sample_features, all_features, task.cost_by),
        seed,
        others,
    )
    limit = target_limit(target) if target is not None else seen.limit
    if limit is None and target is None:
        limit = target_limit(request.parallel)
    summary = dict(task.check_summary([r for r in ran.reference.records if r is not None]))
    verdict = CheckResult(
        tuple(sample),
        parity,
        the_forecast,
        Memory(seen.peak, limit),
        data,
        summary,
        seen.sights,
        ran.ways,
    )
    if request.output_dir is not None:
        try:
            keep(verdict, request)
        except (OSError, UnsafeFileError) as exc:  # the verdict stands; only its copy is lost
            warnings.warn(
                f"kit check: the verdict could not be kept in {request.output_dir} "
                f"({type(exc).__name__}: {exc}); the run's report will show no forecast. "
                "Remove what is in the way (check.json) or choose another output_dir",
                RuntimeWarning,
                stacklevel=2,
            )
    return verdict


def keep(verdict: CheckResult, request: RunRequest) -> Path:
    """Write the verdict into the run's folder (``check.json``), for its report to show.

    Only that file: the run's own files are the run's. It records the
    config's hash and the items, so a report shows the forecast only beside a
    run of the same config over the same items.
    """
    from kit._base.atomic import atomic_file
    from kit.store._manifest import _config_hash, indices_digest
    from kit.store._rundir import RunDir

    assert request.output_dir is not None
    config = request.config
    data = {
        **verdict.to_dict(),
        "config_hash": None if config is None else _config_hash(config),
        "n_items": len(request.items),
        "indices_digest": indices_digest(request.items),
        "checked": time.time(),
    }
    target = RunDir(request.output_dir).check
    with atomic_file(target) as out:
        json.dump(data, out, indent=1, default=str)
    return target


def _client(request: RunRequest) -> Any:
    if request.client is not None:
        return request.client
    return get_session(request.parallel).client


def _local_env(request: RunRequest) -> Mapping[str, Any]:
    """Return the env the reference built in this process (the inline session keeps it)."""
    session = get_session(ParallelConfig(env="inline"))
    name, _ = session.attach(request.provider)
    try:
        return session.local_envs[name]
    finally:
        session.release(name)


def _forecast(
    ran: _Ran,
    sample: Sequence[Index],
    target: ParallelConfig,
    measured_slots: int | None,
    options: Any,
    items: int,
    features: tuple[list[float] | None, list[float] | None, str | None],
    seed: int,
    others: int,
) -> Forecast | None:
    times = ran.times
    timed = sorted(times.seconds)
    if not timed:
        return None
    seconds = [times.seconds[p] for p in timed]
    sample_features, all_features, feature = features
    chosen = [sample_features[p] for p in timed] if sample_features is not None else None
    slots = target_slots(target, measured_slots)
    # A shared cluster's slots go to its runs in equal shares; runner.max_slots caps this one's.
    share = max(1, slots // (others + 1))
    if options.max_slots is not None:
        share = min(share, options.max_slots)
    stats = ran.worker.stats
    # The slots the check's own run had (its share too), to tell its items' work from the rest.
    used = max(1, min((measured_slots or slots) // (others + 1), len(sample)))
    running = max(0.0, stats.wall_seconds - stats.setup_seconds)
    # What the engine spent beyond the items' own work, per chunk (one item a chunk here).
    chunk_seconds = max(0.0, running * used - sum(seconds)) / max(1, times.chunks)
    return forecast(
        seconds,
        items=items,
        slots=share,
        setup_seconds=stats.setup_seconds,
        chunk_seconds=chunk_seconds,
        chunk_size=options.chunk_size,
        features=chosen,
        all_features=all_features,
        feature=feature,
        others=others,
        seed=seed,
    )
