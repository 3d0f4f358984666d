"""The ``kit`` command line.

Exit codes: 0 success, 1 the job ran but some items failed, 2 bad config or
usage (the message is printed, without a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from omegaconf import OmegaConf

from kit.config import ConfigError, load_config, resolve_config, to_overrides

EXIT_OK = 0
EXIT_ITEMS_FAILED = 1
EXIT_USAGE = 2


def _config_show(args: argparse.Namespace) -> int:
    cfg = resolve_config(load_config(args.config, args.overrides))
    sys.stdout.write(OmegaConf.to_yaml(cfg))
    return EXIT_OK


def _config_diff(args: argparse.Namespace) -> int:
    for line in to_overrides(load_config(args.base), load_config(args.edited)):
        print(line)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser for ``kit``."""
    parser = argparse.ArgumentParser(prog="kit", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config = commands.add_parser("config", help="show and compare configs")
    config_commands = config.add_subparsers(dest="config_command", required=True)
    show = config_commands.add_parser(
        "show", help="print the resolved YAML of CONFIG with OVERRIDES applied"
    )
    show.add_argument("config", metavar="CONFIG", help="YAML file")
    show.add_argument("overrides", metavar="OVERRIDES", nargs="*", help="key=value, +key=value…")
    show.set_defaults(handler=_config_show)
    diff = config_commands.add_parser(
        "diff", help="print the overrides that turn config A into config B"
    )
    diff.add_argument("base", metavar="A", help="YAML file")
    diff.add_argument("edited", metavar="B", help="YAML file")
    diff.set_defaults(handler=_config_diff)
    return parser


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
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except ConfigError as exc:
        print(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
