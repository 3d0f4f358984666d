"""``kit report`` and ``kit export-tracking``: a finished folder's page; its trackers fed again."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kit._base.exits import EXIT_NOTHING, EXIT_OK, say
from kit.cli._common import Commands, say_viewers
from kit.store._rundir import SweepDir


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kit.dashboard import write_report, write_sweep_report

    folder = Path(args.output_dir)
    if SweepDir(folder).holds_sweep():
        say(write_sweep_report(folder))
        return EXIT_OK
    from kit.asr.report import decoding_section

    # A decoding run's page shows its scores and alignments too; its records say it is one.
    say(write_report(args.output_dir, sections=[decoding_section]))
    return EXIT_OK


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
        say(f"sent {line}" if ok else line)
    if not sent:
        say(f"kit: {folder} holds no run that started: nothing was sent", file=sys.stderr)
        return EXIT_NOTHING
    say_viewers(where, folder, sweep=SweepDir(folder).holds_sweep())
    unsent = sum(not ok for _, ok in sent)
    if unsent:
        say(f"kit: {unsent} of {len(sent)} run(s) not sent", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    """Add ``report`` and ``export-tracking`` to ``kit``'s commands."""
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
