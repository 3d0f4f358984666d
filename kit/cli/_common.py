"""What ``kit``'s commands share: a config loaded and checked, the options they take alike."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from omegaconf import DictConfig

from kit._base.exits import EXIT_GATE, say
from kit.config import load_config, resolve_config

if TYPE_CHECKING:
    from kit.launch import RunRequest
    from kit.tracking import Tracking

#: What ``add_subparsers`` returns: each command module adds its commands to it.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def load(args: argparse.Namespace) -> DictConfig:
    cfg = load_config(args.config, args.overrides)
    resolve_config(cfg)  # report every missing value before anything starts
    return cfg


def say_viewers(
    tracking: Tracking | None, folder: Path | None, indent: str = "", *, sweep: bool = False
) -> None:
    """Print the commands that open the trackers a run or sweep is exported to."""
    if tracking is not None:
        for command in tracking.commands(folder, sweep=sweep):
            say(f"{indent}{'watch:':<10} {command}")


def tracked(request: RunRequest, overrides: list[str]) -> RunRequest:
    """Return ``request`` with its overrides noted for the trackers (MLflow's kit.overrides tag)."""
    from kit._sweeps.sweep import split_watching

    made = split_watching(overrides)[1]
    if request.tracking is not None and made:
        tracking = dataclasses.replace(request.tracking, overrides=tuple(made))
        return request.replace(tracking=tracking)
    return request


def gates(args: argparse.Namespace) -> dict[str, float]:
    given = {"wer": getattr(args, "max_wer", None), "cer": getattr(args, "max_cer", None)}
    return {metric: limit for metric, limit in given.items() if limit is not None}


def fraction(text: str) -> float:
    """Return an option's error rate: a number from 0 (``0.1`` or ``10%``)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an error rate (0.1 or 10%)") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is below 0")
    return value


def with_gates(parser: argparse.ArgumentParser) -> None:
    for metric in ("wer", "cer"):
        parser.add_argument(
            f"--max-{metric}",
            type=fraction,
            metavar="X",
            help=f"exit with code {EXIT_GATE} when the {metric.upper()} is above X (0.1 or 10%%)",
        )


def positive(text: str) -> int:
    """Return an option's whole number of 1 or more (argparse makes the error a usage one)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not 1 or more")
    return number


def with_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help="YAML file")
    parser.add_argument("overrides", metavar="OVERRIDES", nargs="*", help="key=value, +key=value…")
