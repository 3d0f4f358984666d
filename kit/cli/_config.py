"""``kit config show|diff`` and ``kit notebooks``: a config, two configs' difference.

``kit notebooks`` copies the notebooks Kit ships, to begin with.
"""

from __future__ import annotations

import argparse
import sys

from omegaconf import OmegaConf

from kit._base.exits import EXIT_OK, say
from kit.cli._common import Commands, with_config
from kit.config import load_config, resolve_config, to_overrides


def _config_show(args: argparse.Namespace) -> int:
    cfg = resolve_config(load_config(args.config, args.overrides))
    sys.stdout.write(OmegaConf.to_yaml(cfg))
    return EXIT_OK


def _config_diff(args: argparse.Namespace) -> int:
    for line in to_overrides(load_config(args.base), load_config(args.edited)):
        print(line)
    return EXIT_OK


def _notebooks(args: argparse.Namespace) -> int:
    from kit.examples._notebooks import copy_notebooks

    for path in copy_notebooks(args.folder):
        say(f"copied {path}")
    say(f"open them: jupyter lab {args.folder}")
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    """Add ``config`` and ``notebooks`` to ``kit``'s commands."""
    config = commands.add_parser("config", help="show and compare configs")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    show = config_commands.add_parser(
        "show", help="print the resolved YAML of CONFIG with OVERRIDES applied"
    )
    with_config(show)
    show.set_defaults(handler=_config_show)
    diff = config_commands.add_parser(
        "diff", help="print the overrides that turn config A into config B"
    )
    diff.add_argument("base", metavar="A", help="YAML file")
    diff.add_argument("edited", metavar="B", help="YAML file")
    diff.set_defaults(handler=_config_diff)
    notebooks = commands.add_parser(
        "notebooks",
        help="copy the notebooks Kit ships (quickstart, decoding, workshop...) into DIR",
    )
    notebooks.add_argument("folder", metavar="DIR")
    notebooks.set_defaults(handler=_notebooks)
