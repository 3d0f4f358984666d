"""``kit sweep``: every trial of a grid or a search, side by side, a line as each ends."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit._base.errors import KitError
from kit._base.exits import EXIT_TRIALS_FAILED, say
from kit._base.format import text_table
from kit._trials.trial import sweep_exit_code
from kit.cli._common import Commands, fraction, positive, say_viewers, with_config

if TYPE_CHECKING:
    from kit._sweeps.request import SweepRequest


def minimize(args: argparse.Namespace) -> bool:
    if args.maximize and args.direction == "minimize":
        raise KitError("--maximize and --direction minimize say opposite things: give one")
    return not (args.maximize or args.direction == "maximize")


def sweep_request(args: argparse.Namespace) -> SweepRequest:
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
        minimize=minimize(args),
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
    from kit._trials.compare import run_metric

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


def sweep_command(args: argparse.Namespace) -> int:
    from kit._sweeps.request import trial_line

    request = sweep_request(args)
    minimize = request.minimize
    handle = request.submit(on_trial=lambda *ended: say(trial_line(*ended)))
    total = handle.progress.total
    say(
        f"{'search' if request.searching else 'sweep'} of {total} trial(s), up to "
        f"{min(request.concurrency, total)} at once, into {handle.folder}: a line as each "
        f"trial ends (`kit status {handle.folder}` from another terminal)",
        file=sys.stderr,
    )
    say_viewers(handle.tracking, handle.folder, sweep=True)
    result = handle.join()
    code = sweep_exit_code(result.rows())
    if args.metric is not None and result.trials:
        try:
            say(text_table(result.against_best(args.metric, minimize=minimize)))
            say(_best_line(result, args.metric, minimize, handle.decided))
        except KeyError as exc:  # no completed trial has the metric: say so, show the table
            say(text_table(result.rows()))
            say(f"kit: error: {exc.args[0]}", file=sys.stderr)
            code = max(code, EXIT_TRIALS_FAILED)
    else:
        say(text_table(result.rows()))
    say(f"results: {handle.folder}" if result.trials else f"no trial ran ({handle.folder})")
    return code


def sweep_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output-dir", help="the sweep's folder (default: the config's output_dir)"
    )
    parser.add_argument(
        "--concurrency", type=positive, default=8, help="trials running at once (default 8)"
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
        "--trials", type=positive, help="with --search: how many trials to run (1 or more)"
    )
    parser.add_argument(
        "--stop",
        choices=("decided",),
        help="with --metric (per item, 0 to 1): stop each trial once its difference from the "
        "first is decided by an interval valid at every look",
    )
    parser.add_argument(
        "--margin",
        type=fraction,
        default=0.0,
        metavar="X",
        help="with --stop decided: a difference below X is none worth running on for (default 0)",
    )
    parser.add_argument(
        "--prune",
        choices=("median", "wilcoxon", "none"),
        help="with --search: stop trials that fall behind while they run (default none)",
    )


def add_commands(commands: Commands) -> None:
    """Add ``sweep`` to ``kit``'s commands."""
    sweep = commands.add_parser(
        "sweep",
        help="run every trial of a sweep (key=a,b,c; range(...); choice(...)) side by side",
    )
    with_config(sweep)
    sweep_options(sweep)
    sweep.set_defaults(handler=sweep_command)
