"""``kit run`` and ``kit check``: one run here, with progress and gates; a check first."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from omegaconf import OmegaConf

from kit._base.errors import KitError
from kit._base.exits import EXIT_CHECK, EXIT_GATE, EXIT_ITEMS_FAILED, EXIT_NOTHING, EXIT_OK, say
from kit._base.format import first_line, rounded
from kit.cli._common import (
    Commands,
    gates,
    load,
    positive,
    say_viewers,
    tracked,
    with_config,
    with_gates,
)
from kit.cli._sweep import sweep_command, sweep_options
from kit.config import load_config
from kit.result import RunError, RunResult


def _print_result(result: RunResult) -> int:
    stats = result.stats
    # Items whose forward output a run alike made (docs/reuse.md): said when there are any.
    reused = f", {stats.reused} reused from runs alike" if stats.reused else ""
    say(
        f"{stats.ok} ok, {stats.failed} failed, {stats.not_run} not run"
        f" ({stats.resumed} read back from earlier runs{reused}) in {stats.wall_seconds:.1f} s"
    )
    if result.output_dir is not None:
        say(f"results: {result.output_dir}")
    for error in result.errors[:5]:
        say(f"  {error}")
    if len(result.errors) > 5:
        say(f"  ... {len(result.errors) - 5} more in {result.output_dir or 'result.errors'}")
    if result.summary:
        say(f"summary: {rounded(result.summary)}")
    if result.output_dir is not None:
        from kit.store._check_file import forecast_against_run

        against = forecast_against_run(result.output_dir)
        if against is not None:
            say(against)
    return EXIT_OK if stats.failed == 0 and stats.not_run == 0 else EXIT_ITEMS_FAILED


def _run(args: argparse.Namespace) -> int:
    from kit._from_config import build_runner
    from kit.launch import RunRequest, run
    from kit.views import TerminalProgress

    request = tracked(RunRequest.of(*build_runner(load(args))), args.overrides)
    say_viewers(request.tracking, request.output_dir)
    try:
        result = run(request, on_event=TerminalProgress())
    except RunError as exc:
        say(f"kit: {first_line(exc)}", file=sys.stderr)
        return _print_result(exc.result) or EXIT_ITEMS_FAILED
    code = _print_result(result)
    gated = _gate_summary(result.summary, gates(args))
    # Failed items come first: the scores of a run that lost items are not the run's.
    return code or gated


def _check(args: argparse.Namespace) -> int:
    import json

    from kit._from_config import build_runner
    from kit.check import check
    from kit.config import CheckConfig, parallel_section
    from kit.launch import RunRequest

    cfg = load(args)  # the check section too: its keys and types are checked there
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
        on_step=lambda step: say(f"kit check: {step}", file=sys.stderr),
    )
    say(verdict.card())
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
            say(f"gate max-{metric} {limit:.2%}: nothing scored (no {metric} to judge), FAILED")
            code = EXIT_NOTHING
        elif value > limit:
            say(f"gate max-{metric} {limit:.2%}: {value:.2%}, FAILED")
            code = EXIT_GATE
        else:
            say(f"gate max-{metric} {limit:.2%}: {value:.2%}, passed")
    return code


def _run_or_sweep(args: argparse.Namespace) -> int:
    from kit.config._sweeps import is_sweep

    if args.multirun:
        if gates(args):
            raise KitError(
                "--max-wer and --max-cer gate one run; score each trial of a sweep with "
                "`kit score SWEEP_DIR --max-wer X`"
            )
        return sweep_command(args)
    if is_sweep(args.overrides):
        swept = next(o for o in args.overrides if is_sweep([o]))
        raise KitError(
            f"override {swept!r} is a sweep: run its trials with `kit sweep CONFIG ...` "
            "(or `kit run -m CONFIG ...`), or give one value"
        )
    if args.output_dir is not None:
        args.overrides = [*args.overrides, f"++output_dir={args.output_dir}"]
    return _run(args)


def add_commands(commands: Commands) -> None:
    """Add ``run`` and ``check`` to ``kit``'s commands."""
    run = commands.add_parser("run", help="run the job a config describes, with progress")
    with_config(run)
    run.add_argument(
        "-m", "--multirun", action="store_true", help="sweep: as `kit sweep` (Hydra's flag)"
    )
    sweep_options(run)
    with_gates(run)
    run.set_defaults(handler=_run_or_sweep)
    checking = commands.add_parser(
        "check",
        help="before scaling out: run a sample here, on the workers and batched; compare, "
        "name the cause of a difference, forecast the full run",
    )
    with_config(checking)
    checking.add_argument(
        "--items", type=positive, metavar="N", help="items in the sample (default 20)"
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
