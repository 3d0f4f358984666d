"""A decoding sweep: Kit's sweep against 5 runs in a row, Hydra's joblib multirun and Optuna.

Five values of ``decoder.beam_size`` (1 to 5) over the same 50 utterances
(every fourth of the flite voices' 200), Whisper tiny.en (int8, one thread
per decoder), two at a time on this 2-core machine:

- **Kit sweep**: ``kit.sweep`` on a LocalCluster of 2 workers; the trials
  share each worker's model (the decoder's ``env_keys`` leave the beam out).
- **Kit, 5 runs in a row**: the same trials as separate runs on the same
  cluster, one after another, each stored as a trial is (the way before
  sweeps; they share the model too, through the decoder's env keys).
- **Hydra multirun, joblib launcher** (2 jobs): a Hydra app that loads the
  model and decodes the utterances, run with ``-m decoder.beam_size=1,2,3,4,5``;
  the model is loaded per trial, as a Hydra app does.
- **Optuna GridSampler, n_jobs=2**: an objective that loads the model and
  decodes, over the same 5 beams.

Then the same with a provider whose setup costs 5 s more (a stand-in for a
larger model). Each variant starts from nothing (a new cluster, new
processes). Three rounds, each running every variant once in a rotated
order; reported: the median makespan, model loads, and Kit's ratio to the
best other variant of the same round (median over rounds); the bound is
the decode work of all trials over 2 workers plus one load per worker.

Results are printed and written to benchmarks/results/sweep.json (the manual's
performance page is made from it).
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import kit
from kit.asr import DecodeProvider, DecodeRunner, read_manifest
from kit.asr.decode import build_env
from kit.cluster._plugin import env_report
from kit.examples.asr import CONFIG_PATH, build_corpus
from kit.examples.asr.corpus import FLITE_VOICES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path("runs/asr-data")
PARALLEL = {"env": "local", "n_workers": 2}
BEAMS = [1, 2, 3, 4, 5]
SLOW_SETUP = 5.0
ROUNDS = 3


def median_run(values: list[dict[str, Any]]) -> dict[str, Any]:
    """The round whose makespan is the median (of an odd number of rounds)."""
    return sorted(values, key=lambda r: r["seconds"])[len(values) // 2]


def slow_build(plain: dict[str, Any], extra: float) -> dict[str, Any]:
    """The decoder's env, with ``extra`` seconds of setup first (a larger model)."""
    time.sleep(extra)
    return build_env(plain)


class SlowDecodeProvider(DecodeProvider):
    """DecodeProvider whose setup costs ``SLOW_SETUP`` seconds more."""

    def build_env_local(self) -> dict[str, Any]:
        return slow_build(self._plain(), SLOW_SETUP)

    def make_worker_setup_fn(self) -> Any:
        return functools.partial(slow_build, self._plain(), SLOW_SETUP)


def builds(provider: DecodeProvider) -> int:
    client = kit.get_session(PARALLEL).client
    return sum(r["builds"] for r in client.run(env_report, provider.env_name()).values())


def kit_sweep(cfg: Any, items: list[int], slow: bool, folder: Path) -> dict[str, Any]:
    provider_cls = SlowDecodeProvider if slow else DecodeProvider

    def build(trial_cfg: Any) -> tuple[DecodeRunner, list[int]]:
        return DecodeRunner(provider_cls(trial_cfg), parallel=PARALLEL), items

    began = time.perf_counter()
    result = kit.sweep(cfg, [f"decoder.beam_size={','.join(map(str, BEAMS))}"],
                       output_dir=folder, build=build)  # fmt: skip
    seconds = time.perf_counter() - began
    assert all(r is not None and r.stats.ok == len(items) for r in result.results), result.errors
    loads = builds(provider_cls(cfg))
    work = sum(rec["decode_seconds"] for r in result.results for rec in r.records)
    kit.shutdown()
    wers = [r.summary["wer"] for r in result.results]
    return {"seconds": seconds, "loads": loads, "decode_work": work, "wers": wers}


def kit_in_a_row(cfg: Any, items: list[int], slow: bool, folder: Path) -> dict[str, Any]:
    provider_cls = SlowDecodeProvider if slow else DecodeProvider
    began = time.perf_counter()
    wers = []
    for beam in BEAMS:
        trial = kit.load_config(cfg, [f"decoder.beam_size={beam}"])
        # Stored as a sweep's trials are (records, report.html): the same work but the order.
        runner = DecodeRunner(
            provider_cls(trial), parallel=PARALLEL, output_dir=folder / f"beam-{beam}"
        )
        wers.append(runner.run(items).summary["wer"])
    seconds = time.perf_counter() - began
    loads = builds(provider_cls(cfg))
    kit.shutdown()
    return {"seconds": seconds, "loads": loads, "wers": wers}


HYDRA_APP = textwrap.dedent(
    """
    import json, os, time
    import hydra
    from omegaconf import OmegaConf

    @hydra.main(version_base=None, config_path=".", config_name="decode")
    def main(cfg):
        from kit.asr.decode import DecodeRunner, build_env, corpus_wer
        plain = OmegaConf.to_container(cfg, resolve=True)
        time.sleep(cfg.extra_setup)
        env = build_env(plain)  # the model, loaded for this trial
        with open(cfg.loads_file, "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        records = [DecodeRunner.forward(i, env["recognizer"], env["dataset"], cfg)
                   for i in cfg.bench_items]
        return corpus_wer(records)["wer"]

    if __name__ == "__main__":
        main()
    """
)


def hydra_joblib(cfg: Any, items: list[int], slow: bool, folder: Path) -> dict[str, Any]:
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    for key in ("provider", "runner", "parallel", "output_dir", "items"):
        plain.pop(key, None)
    plain.update(
        bench_items=items,
        extra_setup=SLOW_SETUP if slow else 0.0,
        loads_file=str(folder / "loads.txt"),
    )
    (folder / "decode.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(plain)))
    (folder / "app.py").write_text(HYDRA_APP)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [
        sys.executable, str(folder / "app.py"), "-m",
        f"decoder.beam_size={','.join(map(str, BEAMS))}",
        "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={folder / 'multirun'}", "hydra.job.chdir=false",
    ]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    assert done.returncode == 0, done.stderr[-3000:]
    loads = len((folder / "loads.txt").read_text().splitlines())
    return {"seconds": seconds, "loads": loads}


OPTUNA_SCRIPT = textwrap.dedent(
    """
    import json, sys, time, threading
    import optuna
    from omegaconf import OmegaConf
    from kit.asr.decode import DecodeRunner, build_env, corpus_wer

    plain, items, extra, beams = json.loads(sys.argv[1])
    loads = []

    def objective(trial):
        beam = trial.suggest_categorical("beam", beams)
        time.sleep(extra)
        env = build_env(plain)  # the model, loaded for this trial
        loads.append(1)
        cfg = OmegaConf.create({"decoder": {"beam_size": beam}})
        records = [DecodeRunner.forward(i, env["recognizer"], env["dataset"], cfg) for i in items]
        return corpus_wer(records)["wer"]

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.GridSampler({"beam": beams}))
    began = time.perf_counter()
    study.optimize(objective, n_trials=len(beams), n_jobs=2)
    print(json.dumps({"seconds": time.perf_counter() - began, "loads": len(loads)}))
    """
)


def optuna_grid(cfg: Any, items: list[int], slow: bool) -> dict[str, Any]:
    plain = OmegaConf.to_container(cfg, resolve=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    argument = json.dumps([plain, items, SLOW_SETUP if slow else 0.0, BEAMS])
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", OPTUNA_SCRIPT, argument],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    assert done.returncode == 0, done.stderr[-3000:]
    inner = json.loads(done.stdout.strip().splitlines()[-1])
    # The process's own start (imports) counts, as Kit's cluster start does.
    return {"seconds": seconds, "optimize_seconds": inner["seconds"], "loads": inner["loads"]}


def load_seconds(cfg: Any) -> float:
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    build_env(plain)  # imports and caches out of the timing
    began = time.perf_counter()
    build_env(plain)
    return time.perf_counter() - began


def main() -> int:
    machine = describe(("dask", "distributed", "faster-whisper", "hydra-core", "optuna"))
    manifests = build_corpus(DATA)
    entries = read_manifest(manifests["corpus"])
    flite = [i for i, e in enumerate(entries) if e["speaker"] in FLITE_VOICES]
    items = flite[::4]
    cfg = kit.load_config(
        CONFIG_PATH,
        [f"data.manifest={manifests['corpus']}", "decoder.engine=whisper", "decoder.cpu_threads=1"],
    )
    load = load_seconds(cfg)
    variants = {
        "Kit sweep": lambda slow, base: kit_sweep(cfg, items, slow, base / "sweep"),
        "Kit, 5 runs in a row": lambda slow, base: kit_in_a_row(cfg, items, slow, base),
        "Hydra multirun, joblib (2 jobs)": lambda slow, base: hydra_joblib(cfg, items, slow, base),
        "Optuna GridSampler, n_jobs=2": lambda slow, base: optuna_grid(cfg, items, slow),
    }
    names = list(variants)
    # This machine is shared: its speed drifts by more than the differences measured.
    # Each round runs every variant once, in a rotated order, and Kit is judged
    # against the best peer of the same round.
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(ROUNDS):
            for slow in (False, True):
                tag = "5 s setup" if slow else "Whisper"
                for name in names[round_:] + names[:round_]:
                    base = Path(tmp) / f"{round_}-{tag}-{names.index(name)}"
                    base.mkdir(parents=True)
                    runs.setdefault(f"{tag}: {name}", []).append(variants[name](slow, base))
                print(tag, {k: [round(r["seconds"], 1) for r in v]
                            for k, v in runs.items() if k.startswith(tag)}, flush=True)  # fmt: skip
    rows = {key: median_run(values) for key, values in runs.items()}
    checks: dict[str, bool] = {}
    table = [
        "| variant | makespan, median (s) | each round (s) | model loads | "
        "Kit's sweep / this, median of rounds |",
        "|---|---|---|---|---|",
    ]
    bounds = {}
    for tag, extra in (("Whisper", 0.0), ("5 s setup", SLOW_SETUP)):
        kit_runs = runs[f"{tag}: Kit sweep"]
        kit_row = rows[f"{tag}: Kit sweep"]
        bound = kit_row["decode_work"] / 2 + load + extra
        bounds[tag] = bound
        # Today's way (Kit's runs in a row) counts as a peer too.
        peers = [k for k in runs if k.startswith(tag) and not k.endswith("Kit sweep")]
        for key, values in runs.items():
            if key.startswith(tag):
                ratio = statistics.median(
                    k["seconds"] / r["seconds"] for k, r in zip(kit_runs, values, strict=True)
                )
                each = ", ".join(f"{r['seconds']:.1f}" for r in values)
                table.append(
                    f"| {key} | {rows[key]['seconds']:.1f} | {each} | "
                    f"{rows[key]['loads']} | {ratio:.3f} |"
                )
        against_best = [
            k["seconds"] / min(runs[p][i]["seconds"] for p in peers) for i, k in enumerate(kit_runs)
        ]
        rows[f"{tag}: Kit sweep"]["against_best_peer"] = against_best
        checks[f"{tag}: model loads = 2 workers x 1 env (every round)"] = all(
            r["loads"] == 2 for r in kit_runs
        )
        checks[f"{tag}: makespan within 1.10x of the bound ({bound:.1f} s)"] = (
            kit_row["seconds"] <= 1.10 * bound
        )
        checks[
            f"{tag}: ahead of every peer (Kit / the round's best peer, median of "
            f"{ROUNDS} rounds: {statistics.median(against_best):.3f})"
        ] = statistics.median(against_best) < 1
    wers = rows["Whisper: Kit sweep"]["wers"]
    title, packages = "Sweep benchmark", ("faster-whisper", "hydra-core", "optuna", "dask")
    lines = [
        f"Command: `make bench` (or `python benchmarks/bench_sweep.py`). {len(items)} utterances "
        "(every fourth of the flite voices'), Whisper tiny.en int8, one thread per decoder, "
        f"decoder.beam_size = {', '.join(map(str, BEAMS))}; two decoders at a time. Each variant "
        f"starts from nothing (a new cluster or new processes). {ROUNDS} rounds, each running "
        "every variant once in a rotated order (this machine is shared and its speed drifts by "
        "more than the differences measured); Kit's sweep is judged against the best other "
        "variant of the same round.",
        "",
        *table,
        "",
        "Bound: the decode work of Kit's trials "
        f"({rows['Whisper: Kit sweep']['decode_work']:.1f} s "
        f"and {rows['5 s setup: Kit sweep']['decode_work']:.1f} s) over 2 workers, plus one "
        f"model load per worker ({load:.2f} s, plus {SLOW_SETUP:.0f} s in the second set): "
        f"{bounds['Whisper']:.1f} s and {bounds['5 s setup']:.1f} s. The peers load the model "
        "once per trial (Hydra's app and Optuna's objective build what they use); Kit's trials "
        "share each worker's. WER by beam size (Kit's sweep): "
        + ", ".join(f"{b}: {w:.1%}" for b, w in zip(BEAMS, wers, strict=True))
        + ".",
        "",
    ]
    write_results(RESULTS, "sweep", {"machine": machine, "rows": rows, "runs": runs,
                                     "bounds": bounds, "load_seconds": load},
                  lines, checks, title=title, packages=packages)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
