"""``kit submit``, ``kit status``, ``kit cancel``: a run or sweep driven detached.

Its driver is a process that outlives the shell (:mod:`kit.detached`).
"""

from __future__ import annotations

import argparse
import dataclasses

from kit._base.exits import EXIT_OK, say
from kit.cli._common import Commands, load, say_viewers, tracked, with_config
from kit.cli._sweep import sweep_options, sweep_request
from kit.launch._futures import RunFuture, SweepFuture


def _submit(args: argparse.Namespace) -> int:
    from kit._from_config import build_runner
    from kit.config._sweeps import is_sweep
    from kit.launch import RunRequest, launch

    if args.search is not None or is_sweep(args.overrides):
        return _submit_sweep(args)
    if args.output_dir is not None:
        args.overrides = [*args.overrides, f"++output_dir={args.output_dir}"]
    request = tracked(RunRequest.of(*build_runner(load(args))), args.overrides)
    run = launch(request, detached=True)
    pid = run.snapshot().driver.get("pid")
    say(f"submitted {len(request.items)} items: driver pid {pid}, output {run.output_dir}")
    say(f"  progress:  kit status {run.output_dir}")
    say(f"  stop:      kit cancel {run.output_dir}")
    say(f"  in Python: kit.attach({str(run.output_dir)!r}).result()")
    say_viewers(request.tracking, run.output_dir, indent="  ")
    return EXIT_OK


def _submit_sweep(args: argparse.Namespace) -> int:
    """Check the sweep here, then hand its request to a detached driver that starts it."""
    from kit._sweeps.search import prepare_search
    from kit._sweeps.sweep import prepare_grid, sweep_tracking
    from kit.detached._run import start_sweep_driver

    request = sweep_request(args)
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
    say(f"submitted a sweep of {total} trials: output {folder}")
    say(f"  progress:  kit status {folder}")
    say(f"  stop:      kit cancel {folder}")
    say(f"  in Python: kit.attach({str(folder)!r}).result()")
    say_viewers(sweep_tracking(None, prepared.base), folder, indent="  ", sweep=True)
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from kit.detached._attach import attach

    for line in attach(args.output_dir).status_lines():  # a run's or a sweep's alike
        say(line)
    return EXIT_OK


#: Seconds `kit cancel` waits for the run or sweep to end before it says where it stands.
CANCEL_WAIT = 60.0


def _cancel(args: argparse.Namespace) -> int:
    from kit.detached._attach import attach

    handle = attach(args.output_dir)  # a run's or a sweep's: the same names either way
    if handle.done():
        say(f"{args.output_dir}: nothing to cancel ({handle.status}, {_counts(handle)})")
        return EXIT_OK
    handle.cancel(timeout=CANCEL_WAIT)
    say(
        f"{args.output_dir}: {handle.status} ({_counts(handle)}); completed chunks are kept, "
        "run it again to resume"
    )
    return EXIT_OK


def _counts(handle: RunFuture | SweepFuture) -> str:
    """Say how far a run (items) or a sweep (trials) got, without its status."""
    return handle.progress.counts


def add_commands(commands: Commands) -> None:
    """Add ``submit``, ``status`` and ``cancel`` to ``kit``'s commands."""
    submit = commands.add_parser(
        "submit", help="run it detached: a driver process that outlives this shell"
    )
    with_config(submit)
    sweep_options(submit)  # a sweep (a=1,2 or --search optuna) is submitted whole
    submit.set_defaults(handler=_submit)
    status = commands.add_parser("status", help="progress of the run in OUTPUT_DIR")
    status.add_argument("output_dir", metavar="OUTPUT_DIR")
    status.set_defaults(handler=_status)
    cancel = commands.add_parser("cancel", help="stop the detached run in OUTPUT_DIR")
    cancel.add_argument("output_dir", metavar="OUTPUT_DIR")
    cancel.set_defaults(handler=_cancel)
