"""The ``kit`` command line: :func:`main`, one module a command group.

Exit codes are ``EXIT_CODES`` (``kit --help`` lists them). Messages are
printed as ``kit: error: ...`` without a traceback; ``kit --debug`` shows it.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence
from typing import NoReturn

from kit._base.exits import (
    EXIT_CHECK,
    EXIT_CODES,
    EXIT_GATE,
    EXIT_ITEMS_FAILED,
    EXIT_NO_TRIALS,
    EXIT_NOTHING,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_TRIALS_FAILED,
    EXIT_USAGE,
    guarded,
)
from kit.cli import _cluster, _config, _detached, _results, _run, _score, _sweep
from kit.detached._leave import leave

__all__ = [
    "EXIT_CHECK",
    "EXIT_CODES",
    "EXIT_GATE",
    "EXIT_ITEMS_FAILED",
    "EXIT_NOTHING",
    "EXIT_NO_TRIALS",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_TRIALS_FAILED",
    "EXIT_USAGE",
    "build_parser",
    "entry",
    "main",
]

#: The command groups, in the order ``kit --help`` lists them.
GROUPS = (_config, _run, _sweep, _detached, _score, _results, _cluster)


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

    for group in GROUPS:
        group.add_commands(commands)
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


def entry() -> NoReturn:
    """Run the ``kit`` program: :func:`main`, then exit, not waiting for threads a run left."""
    leave(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
