"""The ``kit`` command line.

Exit codes are ``EXIT_CODES`` (``kit --help`` lists them). Messages are
printed as ``kit: error: ...`` without a traceback; ``kit --debug`` shows it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from omegaconf import DictConfig, OmegaConf

from kit._base.errors import ClusterError, DriverLostError, KitError
from kit._base.format import first_line, printable, rounded, text_table
from kit.config import load_config, resolve_config, to_overrides
from kit.detached._leave import leave
from kit.launch._futures import RunFuture, SweepFuture
from kit.provider import ProviderSetupError
from kit.result import RunError, RunResult, RunStatus
from kit.store._rundir import SweepDir

if TYPE_CHECKING:
    from kit._sweeps.request import SweepRequest
    from kit.launch import RunRequest
    from kit.tracking import Tracking

EXIT_OK = 0
EXIT_ITEMS_FAILED = 1
EXIT_USAGE = 2
EXIT_TRIALS_FAILED = 3
EXIT_NO_TRIALS = 4
EXIT_GATE = 5
EXIT_CHECK = 6
EXIT_REFUSED = 7
EXIT_NOTHING = 8
#: What each exit code means, as ``kit --help`` (and the manual's CLI page) lists them.
EXIT_CODES = {
    EXIT_OK: "success (for a run: every item ran; for a sweep: every trial completed with "
    "every item, or was pruned)",
    EXIT_ITEMS_FAILED: "some items failed or were not run, the run or sweep was interrupted, "
    "or it failed unexpectedly (completed chunks are kept)",
    EXIT_USAGE: "bad config, file, override, option value or usage",
    EXIT_TRIALS_FAILED: "a trial of the sweep ended in error or stopped early (its run failed, "
    "or it gave no number for the metric)",
    EXIT_NO_TRIALS: "a sweep ran no trial at all",
    EXIT_GATE: "a score exceeded its gate (`--max-wer`, `--max-cer` of `kit score` or `kit run`)",
    EXIT_CHECK: "the check failed (`kit check`: the records of its sample differ between the "
    "ways it ran them, or items of the set cannot run)",
    EXIT_REFUSED: "refused on a shared cluster (`kit cluster cancel` of another's run without "
    "the teacher's token; `kit cluster claim` of a class someone else claimed)",
    EXIT_NOTHING: "nothing to judge or send: a gate on a run with no scored utterance (every "
    "item failed, or no reference has a word), or `kit export-tracking` that did not send "
    "every run it was asked to",
}


def sweep_exit_code(rows: Sequence[dict[str, Any]]) -> int:
    """Return the exit code of a sweep whose trials ended as ``rows`` (``SweepResult.rows()``).

    Pruned is a normal end. A sweep in which no trial ran is told apart from
    one whose trials failed, and both from one where only some items failed.

    Examples
    --------
    >>> sweep_exit_code([{"status": "completed", "failed": 0, "ok": 3}, {"status": "pruned"}])
    0
    >>> sweep_exit_code([{"status": "completed", "failed": 1, "ok": 2}])
    1
    >>> sweep_exit_code([{"status": "completed", "failed": 0, "ok": 3}, {"status": "error"}])
    3
    >>> sweep_exit_code([]), sweep_exit_code([{"status": "error", "ok": None}])
    (4, 4)
    """
    if not any(row.get("ok") is not None for row in rows):
        return EXIT_NO_TRIALS
    from kit._trials import TrialState

    states = [TrialState.read(row["status"]) for row in rows]
    # A pruned trial is a normal end of a search; any other is its run's status.
    ran = {state.status for state in states if not state.pruned}
    if ran & {RunStatus.ERROR, RunStatus.STOPPED}:
        return EXIT_TRIALS_FAILED
    if ran & {RunStatus.CANCELLED, RunStatus.RUNNING, RunStatus.STARTING, None}:
        return EXIT_ITEMS_FAILED
    complete = all(
        not row.get("failed")
        for row, state in zip(rows, states, strict=True)
        if state.status is RunStatus.COMPLETED
    )
    return EXIT_OK if complete else EXIT_ITEMS_FAILED


def _config_show(args: argparse.Namespace) -> int:
    cfg = resolve_config(load_config(args.config, args.overrides))
    sys.stdout.write(OmegaConf.to_yaml(cfg))
    return EXIT_OK


def _config_diff(args: argparse.Namespace) -> int:
    for line in to_overrides(load_config(args.base), load_config(args.edited)):
        print(line)
    return EXIT_OK


def _load(args: argparse.Namespace) -> DictConfig:
    cfg = load_config(args.config, args.overrides)
    resolve_config(cfg)  # report every missing value before anything starts
    return cfg


#: Trials of a sweep end on their runs' threads: one line at a time, never two interleaved.
_SAYING = threading.Lock()


def _say(*parts: object, file: Any = None, end: str = "\n") -> None:
    """Print, with control characters escaped: what Kit prints may come from records or files."""
    text = " ".join(printable(part) for part in parts) + end
    with _SAYING:
        print(text, file=file, end="", flush=True)


def _print_result(result: RunResult) -> int:
    stats = result.stats
    # Items whose forward output a run alike made (docs/reuse.md): said when there are any.
    reused = f", {stats.reused} reused from runs alike" if stats.reused else ""
    _say(
        f"{stats.ok} ok, {stats.failed} failed, {stats.not_run} not run"
        f" ({stats.resumed} read back from earlier runs{reused}) in {stats.wall_seconds:.1f} s"
    )
    if result.output_dir is not None:
        _say(f"results: {result.output_dir}")
    for error in result.errors[:5]:
        _say(f"  {error}")
    if len(result.errors) > 5:
        _say(f"  ... {len(result.errors) - 5} more in {result.output_dir or 'result.errors'}")
    if result.summary:
        _say(f"summary: {rounded(result.summary)}")
    if result.output_dir is not None:
        from kit.store._check_file import forecast_against_run

        against = forecast_against_run(result.output_dir)
        if against is not None:
            _say(against)
    return EXIT_OK if stats.failed == 0 and stats.not_run == 0 else EXIT_ITEMS_FAILED


def _say_viewers(
    tracking: Tracking | None, folder: Path | None, indent: str = "", *, sweep: bool = False
) -> None:
    """Print the commands that open the trackers a run or sweep is exported to."""
    if tracking is not None:
        for command in tracking.commands(folder, sweep=sweep):
            _say(f"{indent}{'watch:':<10} {command}")


def _tracked(request: RunRequest, overrides: list[str]) -> RunRequest:
    """Return ``request`` with its overrides noted for the trackers (MLflow's kit.overrides tag)."""
    from kit._sweeps.sweep import split_watching

    made = split_watching(overrides)[1]
    if request.tracking is not None and made:
        tracking = dataclasses.replace(request.tracking, overrides=tuple(made))
        return request.replace(tracking=tracking)
    return request


def _run(args: argparse.Namespace) -> int:
    from kit._from_config import build_runner
    from kit.launch import RunRequest, run
    from kit.views import TerminalProgress

    request = _tracked(RunRequest.of(*build_runner(_load(args))), args.overrides)
    _say_viewers(request.tracking, request.output_dir)
    try:
        result = run(request, on_event=TerminalProgress())
    except RunError as exc:
        _say(f"kit: {first_line(exc)}", file=sys.stderr)
        return _print_result(exc.result) or EXIT_ITEMS_FAILED
    code = _print_result(result)
    gated = _gate_summary(result.summary, _gates(args))
    # Failed items come first: the scores of a run that lost items are not the run's.
    return code or gated


def _check(args: argparse.Namespace) -> int:
    import json

    from kit._from_config import build_runner
    from kit.check import check
    from kit.config import CheckConfig, parallel_section
    from kit.launch import RunRequest

    cfg = _load(args)  # the check section too: its keys and types are checked there
    runner, items = build_runner(cfg)
    stated = cfg.get("check")
    section = CheckConfig(**(OmegaConf.to_container(stated) if stated else {}))  # type: ignore[arg-type]
    target = None
    if args.target is not None:
        other = load_config(args.target, [])
        if "parallel" not in other:
            raise KitError(
                f"--target {args.target} has no parallel section; give a config whose "
                "parallel section is the cluster to forecast the run on"
            )
        target = parallel_section(other.parallel)
    verdict = check(
        RunRequest.of(runner, items),
        n=args.items if args.items is not None else section.items,
        seed=args.seed if args.seed is not None else section.seed,
        rtol=args.rtol if args.rtol is not None else section.rtol,
        ignore=section.ignore,
        target=target,
        on_step=lambda step: _say(f"kit check: {step}", file=sys.stderr),
    )
    _say(verdict.card())
    if args.json is not None:
        from kit._base.atomic import atomic_file

        with atomic_file(args.json, named=True) as out:
            json.dump(verdict.to_dict(), out, indent=1, default=str)
    return EXIT_OK if verdict.ok else EXIT_CHECK


def _gate_summary(summary: dict[str, Any], gates: dict[str, float]) -> int:
    """Print each gate's verdict on the run's summary; return EXIT_GATE if one failed.

    A gate with nothing to judge (no scored utterance) fails with EXIT_NOTHING.
    """
    code = EXIT_OK
    for metric, limit in gates.items():
        value = summary.get(metric)
        counted = summary.get("words" if metric == "wer" else "chars")
        if not isinstance(value, (int, float)) or counted == 0:
            _say(f"gate max-{metric} {limit:.2%}: nothing scored (no {metric} to judge), FAILED")
            code = EXIT_NOTHING
        elif value > limit:
            _say(f"gate max-{metric} {limit:.2%}: {value:.2%}, FAILED")
            code = EXIT_GATE
        else:
            _say(f"gate max-{metric} {limit:.2%}: {value:.2%}, passed")
    return code


def _minimize(args: argparse.Namespace) -> bool:
    if args.maximize and args.direction == "minimize":
        raise KitError("--maximize and --direction minimize say opposite things: give one")
    return not (args.maximize or args.direction == "maximize")


def _sweep_request(args: argparse.Namespace) -> SweepRequest:
    """Return the sweep ``kit sweep`` or ``kit submit`` was asked for, checked."""
    import os

    from kit._sweeps.request import SweepRequest

    request = SweepRequest(
        # Absolute: a detached driver starts it from another folder.
        config=os.path.abspath(args.config),
        overrides=tuple(args.overrides),
        output_dir=Path(args.output_dir) if args.output_dir is not None else None,
        concurrency=args.concurrency,
        metric=args.metric,
        minimize=_minimize(args),
        search=args.search,
        trials=args.trials,
        prune=args.prune,
        stop=args.stop,
        margin=args.margin,
    )
    request.check()
    return request


def _best_line(result: Any, metric: str, minimize: bool, decided: dict[int, int]) -> str:
    """Say the sweep's best trial; with ``stop: decided``, the trials decided better first.

    A trial stopped once decided better than trial-000 has no full-set value
    to rank by: the line names it (them) from the decision, not the completed
    trial the table would otherwise rank first.
    """
    from kit._compare import run_metric

    better = sorted(n for n, side in decided.items() if side == (-1 if minimize else 1))
    if better:
        named = ", ".join(
            f"{result.trials[n].name} {' '.join(result.trials[n].overrides)}" for n in better
        )
        return (
            f"best: {named}: decided {'lower' if minimize else 'higher'} {metric} than trial-000"
            + (
                " (not ranked among themselves: each stopped once decided)"
                if len(better) > 1
                else ""
            )
        )
    trial, best = result.best(metric, minimize=minimize)
    value = run_metric(best, metric)
    shown = round(value, 4) if isinstance(value, float) else value
    return f"best: {trial.name} {' '.join(trial.overrides)}: {shown}"


def _sweep(args: argparse.Namespace) -> int:
    from kit._sweeps.request import trial_line

    request = _sweep_request(args)
    minimize = request.minimize
    handle = request.submit(on_trial=lambda *ended: _say(trial_line(*ended)))
    total = handle.progress.total
    _say(
        f"{'search' if request.searching else 'sweep'} of {total} trial(s), up to "
        f"{min(request.concurrency, total)} at once, into {handle.folder}: a line as each "
        f"trial ends (`kit status {handle.folder}` from another terminal)",
        file=sys.stderr,
    )
    _say_viewers(handle.tracking, handle.folder, sweep=True)
    result = handle.join()
    code = sweep_exit_code(result.rows())
    if args.metric is not None and result.trials:
        try:
            _say(text_table(result.against_best(args.metric, minimize=minimize)))
            _say(_best_line(result, args.metric, minimize, handle.decided))
        except KeyError as exc:  # no completed trial has the metric: say so, show the table
            _say(text_table(result.rows()))
            _say(f"kit: error: {exc.args[0]}", file=sys.stderr)
            code = max(code, EXIT_TRIALS_FAILED)
    else:
        _say(text_table(result.rows()))
    _say(f"results: {handle.folder}" if result.trials else f"no trial ran ({handle.folder})")
    return code


def _submit(args: argparse.Namespace) -> int:
    from kit._from_config import build_runner
    from kit.config._sweeps import is_sweep
    from kit.launch import RunRequest, launch

    if args.search is not None or is_sweep(args.overrides):
        return _submit_sweep(args)
    if args.output_dir is not None:
        args.overrides = [*args.overrides, f"++output_dir={args.output_dir}"]
    request = _tracked(RunRequest.of(*build_runner(_load(args))), args.overrides)
    run = launch(request, detached=True)
    pid = run.snapshot().driver.get("pid")
    _say(f"submitted {len(request.items)} items: driver pid {pid}, output {run.output_dir}")
    _say(f"  progress:  kit status {run.output_dir}")
    _say(f"  stop:      kit cancel {run.output_dir}")
    _say(f"  in Python: kit.attach({str(run.output_dir)!r}).result()")
    _say_viewers(request.tracking, run.output_dir, indent="  ")
    return EXIT_OK


def _submit_sweep(args: argparse.Namespace) -> int:
    """Check the sweep here, then hand its request to a detached driver that starts it."""
    from kit._sweeps.search import prepare_search
    from kit._sweeps.sweep import prepare_grid, sweep_tracking
    from kit.detached._run import start_sweep_driver

    request = _sweep_request(args)
    if request.searching:
        direction = "minimize" if request.minimize else "maximize"
        assert request.trials is not None and request.metric is not None  # checked
        prepared = prepare_search(
            request.config,
            request.overrides,
            request.trials,
            request.metric,
            direction,
            request.output_dir,
        )
        total = request.trials
    else:
        prepared = prepare_grid(request.config, request.overrides, request.output_dir)
        total = len(prepared.record["trials"])
    folder = prepared.folder.resolve()
    # The driver starts this very sweep, into this folder (the one checked here).
    request = dataclasses.replace(request, output_dir=folder)
    folder.mkdir(parents=True, exist_ok=True)
    start_sweep_driver(folder, request, total, prepared.record)
    _say(f"submitted a sweep of {total} trials: output {folder}")
    _say(f"  progress:  kit status {folder}")
    _say(f"  stop:      kit cancel {folder}")
    _say(f"  in Python: kit.attach({str(folder)!r}).result()")
    _say_viewers(sweep_tracking(None, prepared.base), folder, indent="  ", sweep=True)
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from kit.detached._attach import attach

    for line in attach(args.output_dir).status_lines():  # a run's or a sweep's alike
        _say(line)
    return EXIT_OK


#: Seconds `kit cancel` waits for the run or sweep to end before it says where it stands.
CANCEL_WAIT = 60.0


def _cancel(args: argparse.Namespace) -> int:
    from kit.detached._attach import attach

    handle = attach(args.output_dir)  # a run's or a sweep's: the same names either way
    if handle.done():
        _say(f"{args.output_dir}: nothing to cancel ({handle.status}, {_counts(handle)})")
        return EXIT_OK
    handle.cancel(timeout=CANCEL_WAIT)
    _say(
        f"{args.output_dir}: {handle.status} ({_counts(handle)}); completed chunks are kept, "
        "run it again to resume"
    )
    return EXIT_OK


def _counts(handle: RunFuture | SweepFuture) -> str:
    """Say how far a run (items) or a sweep (trials) got, without its status."""
    return handle.progress.counts


def _cluster_script(args: argparse.Namespace) -> int:
    from kit.cluster._builders import job_script
    from kit.config import parallel_section

    cfg = _load(args)
    print(job_script(parallel_section(cfg.get("parallel"))), end="")
    return EXIT_OK


def _cluster_runs(args: argparse.Namespace) -> int:
    from kit.cluster._teacher import class_runs, connect, runs_table

    client = connect(args.target)
    try:
        _say(runs_table(class_runs(client)))
    finally:
        client.close()
    return EXIT_OK


def _cluster_cancel(args: argparse.Namespace) -> int:
    from kit.cluster._teacher import cancel, connect

    client = connect(args.target)
    try:
        try:
            seat = cancel(client, args.run)
        except KeyError as exc:
            _say(f"kit: error: {exc.args[0]}", file=sys.stderr)
            return EXIT_USAGE
        except PermissionError as exc:
            _say(f"kit: refused: {exc}", file=sys.stderr)
            return EXIT_REFUSED
    finally:
        client.close()
    _say(
        f"asked run {seat['run_id']} ({seat['user']}@{seat['host']}, {seat['runner']}, "
        f"{seat['done']}/{seat['total']} items) to stop, as {seat['cancel_by']}; it ends within "
        "a second, "
        "its completed items kept"
    )
    return EXIT_OK


def _cluster_board(args: argparse.Namespace) -> int:
    import shutil
    import time

    from kit.cluster._board import board_text
    from kit.cluster._teacher import class_runs, connect

    if not args.every > 0:
        _say("kit: error: --every takes seconds above 0", file=sys.stderr)
        return EXIT_USAGE
    client = connect(args.target)
    try:
        while True:
            began = time.monotonic()
            width = shutil.get_terminal_size((120, 40)).columns
            text = board_text(class_runs(client), width=width)
            if args.once:
                _say(text)
                return EXIT_OK
            _say("\x1b[H\x1b[2J" + text + f"\n(again every {args.every:g} s; Ctrl-C stops)")
            time.sleep(max(0.0, args.every - (time.monotonic() - began)))
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        client.close()


def _cluster_claim(args: argparse.Namespace) -> int:
    from kit.cluster._teacher import claim, connect

    client = connect(args.target)
    try:
        try:
            holder, path = claim(client)
        except PermissionError as exc:
            _say(f"kit: refused: {exc}", file=sys.stderr)
            return EXIT_REFUSED
    finally:
        client.close()
    _say(
        f"{holder} is this class's teacher; the token is in {path} (readable by you alone): "
        "kit cluster cancel reads it to stop anyone's run"
    )
    return EXIT_OK


def _cluster_start(args: argparse.Namespace) -> int:
    from kit.cluster._class_cluster import class_cluster, deaf_workers, wait_for_the_end

    if args.workers < 1 or args.threads < 1:
        _say(
            "kit: error: --workers and --threads take a whole number of at least 1", file=sys.stderr
        )
        return EXIT_USAGE
    if args.warm is not None and not Path(args.warm).is_file():
        _say(f"kit: error: --warm {args.warm}: no such config file", file=sys.stderr)
        return EXIT_USAGE
    if args.warm is not None:
        from kit.provider import build_provider

        # Its mistakes (a key, a missing corpus) are said before a cluster starts for nothing.
        build_provider(_load(argparse.Namespace(config=args.warm, overrides=[]))).check_config()
    try:
        started = class_cluster(
            args.workers,
            args.threads,
            host=args.host,
            port=args.port,
            memory_limit=args.memory_limit,
            claim_it=args.as_class,
        )
        with deaf_workers(), started as (cluster, _):
            for line in cluster.lines()[:-1]:
                _say(line)
            if args.warm is not None:
                warmed = argparse.Namespace(target=cluster.address, config=args.warm, overrides=[])
                code = _cluster_warm(warmed)
                if code != EXIT_OK:
                    return code
            _say(cluster.lines()[-1])
            wait_for_the_end()
    except ClusterError as exc:  # the port taken, say
        _say(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _say("class ended: scheduler and workers stopped")
    return EXIT_OK


def _cluster_warm(args: argparse.Namespace) -> int:
    from kit.cluster import get_session, warm
    from kit.cluster._teacher import parallel_for
    from kit.config import parallel_section

    cfg = _load(args)
    # Where: the target; how many envs to keep and for how long: the class's config.
    kept = {
        k: v for k, v in (cfg.get("parallel") or {}).items() if k.endswith("envs") or "idle" in k
    }
    merged = OmegaConf.merge(OmegaConf.structured(parallel_for(args.target)), kept)
    assert isinstance(merged, DictConfig)
    parallel = parallel_section(merged)
    with get_session(parallel) as session:
        warmed = warm(session, cfg)
    _say(
        f"built {warmed['env']} on {warmed['workers']} workers in {warmed['seconds']:.1f} s "
        f"(env keys: {', '.join(warmed['keys'])}); it stays until parallel.max_envs pushes it "
        f"out or nobody uses it for {parallel.env_idle_timeout or 'ever'} s"
    )
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kit.dashboard import write_report, write_sweep_report

    folder = Path(args.output_dir)
    if SweepDir(folder).holds_sweep():
        _say(write_sweep_report(folder))
        return EXIT_OK
    from kit.asr.report import decoding_section

    # A decoding run's page shows its scores and alignments too; its records say it is one.
    _say(write_report(args.output_dir, sections=[decoding_section]))
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    # Only the decoding check's runs have references and hypotheses to write.
    from kit.asr.export import export

    try:
        written = export(args.output_dir, args.out, args.format, args.normalizer)
    except ValueError as exc:
        raise KitError(str(exc)) from None
    for path in written:
        _say(f"wrote {path}")
    if args.format == "trn" and written:
        import shutil

        ref, hyp = written[0], written[1]
        # Debian's sctk installs sclite behind its own front end.
        sclite = "sctk sclite" if not shutil.which("sclite") and shutil.which("sctk") else "sclite"
        _say(f"score them with sclite: {sclite} -r {ref} trn -h {hyp} trn -i rm -o sum stdout")
        # Without -e utf-8, sclite -c counts the bytes of UTF-8 text, not its characters.
        _say(f"  characters: {sclite} -r {ref} trn -h {hyp} trn -i rm -c -e utf-8 -o sum stdout")
    return EXIT_OK


def _gates(args: argparse.Namespace) -> dict[str, float]:
    given = {"wer": getattr(args, "max_wer", None), "cer": getattr(args, "max_cer", None)}
    return {metric: limit for metric, limit in given.items() if limit is not None}


def _score(args: argparse.Namespace) -> int:
    from kit.asr.rescore import score_folder

    if args.convention == "open-asr":
        return _score_open_asr(args)
    metrics = [m.strip() for m in args.metric.split(",") if m.strip()]
    unknown = [m for m in metrics if m not in ("wer", "cer")]
    if unknown or not metrics:
        raise KitError(f"--metric {args.metric!r}: give wer, cer or wer,cer")
    try:
        every = score_folder(
            args.output_dir, args.normalizer, _gates(args), not args.no_write, metrics
        )
    except ValueError as exc:
        raise KitError(str(exc)) from None
    for scores in every:
        _say(f"{scores.run} (normalizer: {scores.normalizer})")
        if scores.missing:
            _say(f"{scores.missing} item(s) have no hypothesis (failed or not run): not scored")
        _say(scores.table(metrics))
        if args.align:
            _say(scores.alignments(args.align))
        for name, check in scores.gate.items():
            verdict = "passed" if check["passed"] else "FAILED"
            value = "nothing scored" if check["value"] is None else f"{check['value']:.2%}"
            _say(f"gate {name.replace('_', '-')} {check['limit']:.2%}: {value}, {verdict}")
    if any(check["value"] is None for scores in every for check in scores.gate.values()):
        return EXIT_NOTHING
    return EXIT_OK if all(scores.passed for scores in every) else EXIT_GATE


def _score_open_asr(args: argparse.Namespace) -> int:
    """Score each run as the Open ASR Leaderboard does; gate on its WER."""
    from kit.asr._stored import decoded, runs_in
    from kit.asr.open_asr import open_asr_score
    from kit.store._results import read_result

    if args.normalizer is not None or args.max_cer is not None or args.align:
        raise KitError(
            "--convention open-asr scores with the leaderboard's own normaliser and WER: "
            "leave out --normalizer, --max-cer and --align"
        )
    code = EXIT_OK
    for run, _ in runs_in(Path(args.output_dir)):
        try:
            records = [r for _, r in decoded(read_result(run).records, str(run), "scored")]
        except ValueError as exc:
            raise KitError(str(exc)) from None
        score = open_asr_score(records)
        _say(f"{run} (convention: open-asr)")
        _say(score.line())
        if args.max_wer is not None:
            value = score.wer / 100 if score.utterances else None
            passed = value is not None and value <= args.max_wer
            shown = "nothing scored" if value is None else f"{value:.2%}"
            _say(f"gate max-wer {args.max_wer:.2%}: {shown}, {'passed' if passed else 'FAILED'}")
            code = max(code, EXIT_OK if passed else EXIT_NOTHING if value is None else EXIT_GATE)
    return code


def _notebooks(args: argparse.Namespace) -> int:
    from kit.examples._notebooks import copy_notebooks

    for path in copy_notebooks(args.folder):
        _say(f"copied {path}")
    _say(f"open them: jupyter lab {args.folder}")
    return EXIT_OK


def _fraction(text: str) -> float:
    """Return an option's error rate: a number from 0 (``0.1`` or ``10%``)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an error rate (0.1 or 10%)") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is below 0")
    return value


def _with_gates(parser: argparse.ArgumentParser) -> None:
    for metric in ("wer", "cer"):
        parser.add_argument(
            f"--max-{metric}",
            type=_fraction,
            metavar="X",
            help=f"exit with code {EXIT_GATE} when the {metric.upper()} is above X (0.1 or 10%%)",
        )


def _positive(text: str) -> int:
    """Return an option's whole number of 1 or more (argparse makes the error a usage one)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not 1 or more")
    return number


def _export_tracking(args: argparse.Namespace) -> int:
    from kit.tracking import Tracking
    from kit.tracking._again import send_folder, tracking_of

    given = {"mlflow": args.mlflow, "tensorboard": args.tensorboard}
    section = {key: value for key, value in given.items() if value is not None}
    if args.experiment is not None:
        section["experiment"] = args.experiment
    tracking = Tracking.of(section) if args.mlflow or args.tensorboard else None
    folder = Path(args.output_dir)
    where = tracking_of(folder, tracking)
    sent = send_folder(folder, where)
    for line, ok in sent:
        _say(f"sent {line}" if ok else line)
    if not sent:
        _say(f"kit: {folder} holds no run that started: nothing was sent", file=sys.stderr)
        return EXIT_NOTHING
    _say_viewers(where, folder, sweep=SweepDir(folder).holds_sweep())
    unsent = sum(not ok for _, ok in sent)
    if unsent:
        _say(f"kit: {unsent} of {len(sent)} run(s) not sent", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_OK


def _sweep_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output-dir", help="the sweep's folder (default: the config's output_dir)"
    )
    parser.add_argument(
        "--concurrency", type=_positive, default=8, help="trials running at once (default 8)"
    )
    parser.add_argument(
        "--metric",
        help="a summary metric (e.g. wer): each trial against the best, with a 95%% interval",
    )
    parser.add_argument("--maximize", action="store_true", help="with --metric: higher is better")
    parser.add_argument(
        "--direction",
        choices=("minimize", "maximize"),
        help="with --metric: whether lower (default) or higher is better",
    )
    parser.add_argument(
        "--search",
        choices=("optuna",),
        help="search the space (interval(...), tag(log, ...), a=1,2) with Optuna instead of "
        "running every trial of a grid",
    )
    parser.add_argument(
        "--trials", type=_positive, help="with --search: how many trials to run (1 or more)"
    )
    parser.add_argument(
        "--stop",
        choices=("decided",),
        help="with --metric (per item, 0 to 1): stop each trial once its difference from the "
        "first is decided by an interval valid at every look",
    )
    parser.add_argument(
        "--margin",
        type=_fraction,
        default=0.0,
        metavar="X",
        help="with --stop decided: a difference below X is none worth running on for (default 0)",
    )
    parser.add_argument(
        "--prune",
        choices=("median", "wilcoxon", "none"),
        help="with --search: stop trials that fall behind while they run (default none)",
    )


def _run_or_sweep(args: argparse.Namespace) -> int:
    from kit.config._sweeps import is_sweep

    if args.multirun:
        if _gates(args):
            raise KitError(
                "--max-wer and --max-cer gate one run; score each trial of a sweep with "
                "`kit score SWEEP_DIR --max-wer X`"
            )
        return _sweep(args)
    if is_sweep(args.overrides):
        swept = next(o for o in args.overrides if is_sweep([o]))
        raise KitError(
            f"override {swept!r} is a sweep: run its trials with `kit sweep CONFIG ...` "
            "(or `kit run -m CONFIG ...`), or give one value"
        )
    if args.output_dir is not None:
        args.overrides = [*args.overrides, f"++output_dir={args.output_dir}"]
    return _run(args)


def _with_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="YAML file")
    parser.add_argument("overrides", metavar="OVERRIDES", nargs="*", help="key=value, +key=value…")


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser for ``kit``."""
    codes = "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
    parser = argparse.ArgumentParser(
        prog="kit",
        description="Kit: run experiments from a config, locally or on a cluster.",
        epilog=f"Exit codes: {codes}.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the Python traceback of an unexpected error"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config = commands.add_parser("config", help="show and compare configs")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    show = config_commands.add_parser(
        "show", help="print the resolved YAML of CONFIG with OVERRIDES applied"
    )
    _with_config(show)
    show.set_defaults(handler=_config_show)
    diff = config_commands.add_parser(
        "diff", help="print the overrides that turn config A into config B"
    )
    diff.add_argument("base", metavar="A", help="YAML file")
    diff.add_argument("edited", metavar="B", help="YAML file")
    diff.set_defaults(handler=_config_diff)

    run = commands.add_parser("run", help="run the job a config describes, with progress")
    _with_config(run)
    run.add_argument(
        "-m", "--multirun", action="store_true", help="sweep: as `kit sweep` (Hydra's flag)"
    )
    _sweep_options(run)
    _with_gates(run)
    run.set_defaults(handler=_run_or_sweep)
    checking = commands.add_parser(
        "check",
        help="before scaling out: run a sample here, on the workers and batched; compare, "
        "name the cause of a difference, forecast the full run",
    )
    _with_config(checking)
    checking.add_argument(
        "--items", type=_positive, metavar="N", help="items in the sample (default 20)"
    )
    checking.add_argument("--seed", type=int, help="which items the sample takes (default 0)")
    checking.add_argument(
        "--rtol",
        type=float,
        metavar="R",
        help="numbers within this relative difference are the same (default: the runner's, 0)",
    )
    checking.add_argument(
        "--target",
        metavar="CONFIG",
        help="forecast the run on this config's parallel section (default: CONFIG's)",
    )
    checking.add_argument("--json", metavar="FILE", help="also write the verdict to FILE")
    checking.set_defaults(handler=_check)
    sweep = commands.add_parser(
        "sweep",
        help="run every trial of a sweep (key=a,b,c; range(...); choice(...)) side by side",
    )
    _with_config(sweep)
    _sweep_options(sweep)
    sweep.set_defaults(handler=_sweep)
    submit = commands.add_parser(
        "submit", help="run it detached: a driver process that outlives this shell"
    )
    _with_config(submit)
    _sweep_options(submit)  # a sweep (a=1,2 or --search optuna) is submitted whole
    submit.set_defaults(handler=_submit)
    status = commands.add_parser("status", help="progress of the run in OUTPUT_DIR")
    status.add_argument("output_dir", metavar="OUTPUT_DIR")
    status.set_defaults(handler=_status)
    cancel = commands.add_parser("cancel", help="stop the detached run in OUTPUT_DIR")
    cancel.add_argument("output_dir", metavar="OUTPUT_DIR")
    cancel.set_defaults(handler=_cancel)
    report = commands.add_parser(
        "report", help="(re)build OUTPUT_DIR/report.html: plots, config and statistics"
    )
    report.add_argument("output_dir", metavar="OUTPUT_DIR")
    report.set_defaults(handler=_report)
    again = commands.add_parser(
        "export-tracking",
        help="send the finished run or sweep in OUTPUT_DIR to MLflow/TensorBoard again "
        "(a tracker that was down missed it)",
    )
    again.add_argument("output_dir", metavar="OUTPUT_DIR")
    again.add_argument(
        "--mlflow", help="an MLflow tracking URI (default: the run's tracking.mlflow)"
    )
    again.add_argument(
        "--tensorboard", help="a TensorBoard log folder (default: the run's tracking.tensorboard)"
    )
    again.add_argument("--experiment", help="the MLflow experiment (default: kit)")
    again.set_defaults(handler=_export_tracking)
    rescore = commands.add_parser(
        "score",
        help="score a decoding run's stored hypotheses again (another normalizer, a gate); "
        "no decoding",
    )
    rescore.add_argument("output_dir", metavar="OUTPUT_DIR", help="a decoding run or sweep")
    rescore.add_argument(
        "--metric", default="wer,cer", help="what to print: wer, cer or wer,cer (default)"
    )
    rescore.add_argument(
        "--normalizer",
        help="whisper, basic, none, or the dotted path of your own function "
        "(default: the run's scoring.normalizer)",
    )
    rescore.add_argument(
        "--convention",
        choices=("kit", "open-asr"),
        default="kit",
        help="kit: Kit's scoring, as sclite counts (default); open-asr: the Open ASR "
        "Leaderboard's WER and RTFx (Whisper's normaliser, kaldialign merging compounds)",
    )
    rescore.add_argument(
        "--align",
        type=_positive,
        metavar="N",
        help="also print the N utterances with the most errors, aligned, and the top substitutions",
    )
    _with_gates(rescore)
    rescore.add_argument(
        "--no-write", action="store_true", help="print only; do not write metrics.json"
    )
    rescore.set_defaults(handler=_score)
    export = commands.add_parser(
        "export",
        help="write a decoding run's references and hypotheses for sclite (trn) or ESPnet (scp)",
    )
    export.add_argument("output_dir", metavar="OUTPUT_DIR", help="a decoding run or sweep")
    export.add_argument(
        "--format",
        choices=("trn", "scp"),
        default="trn",
        help="trn: sclite's transcripts, normalised as Kit scored them (default); scp: ESPnet3's "
        "ref.scp/hyp.scp, as decoded",
    )
    export.add_argument(
        "--normalizer",
        help="trn: whisper, basic, none, or the dotted path of your own function "
        "(default: the run's scoring.normalizer)",
    )
    export.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="OUT",
        help="the folder to write (a sweep: one sub-folder per trial)",
    )
    export.set_defaults(handler=_export)
    notebooks = commands.add_parser(
        "notebooks",
        help="copy the notebooks Kit ships (quickstart, decoding, workshop...) into DIR",
    )
    notebooks.add_argument("folder", metavar="DIR")
    notebooks.set_defaults(handler=_notebooks)
    cluster = commands.add_parser("cluster", help="job-queue clusters; a class's shared cluster")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", required=True)
    script = cluster_commands.add_parser(
        "script", help="print the job script the config would submit (submits nothing)"
    )
    _with_config(script)
    script.set_defaults(handler=_cluster_script)
    target_help = (
        "the scheduler's address, or a YAML config whose parallel section reaches it "
        "(address and TLS files)"
    )
    runs = cluster_commands.add_parser(
        "runs", help="list every run on the cluster: user, host, runner, items, slots, envs"
    )
    runs.add_argument("target", metavar="TARGET", help=target_help)
    runs.set_defaults(handler=_cluster_runs)
    stop = cluster_commands.add_parser(
        "cancel", help="stop one run on the cluster (its completed items are kept)"
    )
    stop.add_argument("target", metavar="TARGET", help=target_help)
    stop.add_argument("run", metavar="RUN", help="the run's id, or its first characters")
    stop.set_defaults(handler=_cluster_cancel)
    begin = cluster_commands.add_parser(
        "start",
        help="start a cluster on this machine, in the foreground (Ctrl-C ends it); with "
        "--class, a class's: you its teacher, and the line attendees add",
    )
    begin.add_argument(
        "--class", dest="as_class", action="store_true", help="claim it as this class's teacher"
    )
    begin.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    begin.add_argument("--threads", type=int, default=2, help="threads each (default 2)")
    begin.add_argument(
        "--memory-limit", default="auto", help="each worker's, e.g. 6GiB (default: a share)"
    )
    begin.add_argument(
        "--host", default="127.0.0.1", help="where it listens (default 127.0.0.1: this machine)"
    )
    begin.add_argument("--port", type=int, default=8786, help="the scheduler's port (8786)")
    begin.add_argument(
        "--warm", metavar="CONFIG", help="build this config's env on every worker first"
    )
    begin.set_defaults(handler=_cluster_start)
    board = cluster_commands.add_parser(
        "board",
        help="the class board: each attendee's exercise, checks and runs, the envs; "
        "drawn again every second until Ctrl-C",
    )
    board.add_argument("target", metavar="TARGET", help=target_help)
    board.add_argument("--once", action="store_true", help="print it once and end")
    board.add_argument("--every", type=float, default=1.0, help="seconds between (default 1)")
    board.set_defaults(handler=_cluster_board)
    teach = cluster_commands.add_parser(
        "claim",
        help="become the teacher of the class on the cluster (first come; a token only you can "
        "read lets kit cluster cancel stop anyone's run)",
    )
    teach.add_argument("target", metavar="TARGET", help=target_help)
    teach.set_defaults(handler=_cluster_claim)
    warm_up = cluster_commands.add_parser(
        "warm", help="build the config's env on every worker now (before the class arrives)"
    )
    warm_up.add_argument("target", metavar="TARGET", help=target_help)
    _with_config(warm_up)
    warm_up.set_defaults(handler=_cluster_warm)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; overrides may come after options too (``kit run c.yaml -o out a=1``).

    argparse alone takes a command's positionals in one stretch, so an override
    after an option was an unrecognised argument.
    """
    args, extra = parser.parse_known_args(argv)
    if extra and hasattr(args, "overrides") and not any(a.startswith("-") for a in extra):
        args.overrides = [*args.overrides, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


@functools.cache
def _parser() -> argparse.ArgumentParser:
    # Built once: building it costs 13 ms (argparse looks its words up in gettext's
    # catalogs), more than many commands take; parse_args leaves it as it was.
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    r"""Run the ``kit`` command line; return the exit code.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.yaml"
    >>> _ = path.write_text("lr: 0.1\nname: demo\n")
    >>> main(["config", "show", str(path), "lr=0.5"])
    lr: 0.5
    name: demo
    0
    """
    from kit.cluster._class_cluster import deaf_workers

    args = _parse(_parser(), argv)
    # A terminal's Ctrl-C reaches every process of its group: the workers a command starts
    # ignore it (each printed a KeyboardInterrupt traceback), and this process takes it,
    # cancels the work and closes them in order.
    with deaf_workers():
        return guarded(lambda: args.handler(args), debug=args.debug)


def guarded(call: Callable[[], int], debug: bool = False) -> int:
    """Return what ``call`` returns, or the exit code of what it raised, said on stderr.

    The command line's handlers and a detached sweep's driver end so.
    """
    try:
        code: int = call()
    except KeyboardInterrupt:
        _say("kit: interrupted; completed chunks are kept, run again to resume", file=sys.stderr)
        return EXIT_ITEMS_FAILED
    except (ProviderSetupError, RunError, ClusterError, DriverLostError) as exc:
        # The work or the place it runs failed, not the input.
        _say(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_ITEMS_FAILED
    except (KitError, FileNotFoundError, ImportError) as exc:
        _say(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if debug:
            raise
        _say(
            f"kit: error: {type(exc).__name__}: {exc} (`kit --debug ...` shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_ITEMS_FAILED
    return code


def entry() -> NoReturn:
    """Run the ``kit`` program: :func:`main`, then exit, not waiting for threads a run left."""
    leave(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
