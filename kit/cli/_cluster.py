"""``kit cluster``: a job queue's script; a class's shared cluster and its board.

Its commands: ``script``, ``start``, ``warm``, ``claim``, ``runs``, ``board``, ``cancel``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from kit._base.errors import ClusterError
from kit._base.exits import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, say
from kit.cli._common import Commands, load, with_config


def _cluster_script(args: argparse.Namespace) -> int:
    from kit.cluster._builders import job_script
    from kit.config import parallel_section

    cfg = load(args)
    print(job_script(parallel_section(cfg.get("parallel"))), end="")
    return EXIT_OK


def _cluster_runs(args: argparse.Namespace) -> int:
    from kit.cluster._teacher import class_runs, connect, runs_table

    client = connect(args.target)
    try:
        say(runs_table(class_runs(client)))
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
            say(f"kit: error: {exc.args[0]}", file=sys.stderr)
            return EXIT_USAGE
        except PermissionError as exc:
            say(f"kit: refused: {exc}", file=sys.stderr)
            return EXIT_REFUSED
    finally:
        client.close()
    say(
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
        say("kit: error: --every takes seconds above 0", file=sys.stderr)
        return EXIT_USAGE
    client = connect(args.target)
    try:
        while True:
            began = time.monotonic()
            width = shutil.get_terminal_size((120, 40)).columns
            text = board_text(class_runs(client), width=width)
            if args.once:
                say(text)
                return EXIT_OK
            say("\x1b[H\x1b[2J" + text + f"\n(again every {args.every:g} s; Ctrl-C stops)")
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
            say(f"kit: refused: {exc}", file=sys.stderr)
            return EXIT_REFUSED
    finally:
        client.close()
    say(
        f"{holder} is this class's teacher; the token is in {path} (readable by you alone): "
        "kit cluster cancel reads it to stop anyone's run"
    )
    return EXIT_OK


def _cluster_start(args: argparse.Namespace) -> int:
    from kit.cluster._class_cluster import class_cluster, deaf_workers, wait_for_the_end

    if args.workers < 1 or args.threads < 1:
        say(
            "kit: error: --workers and --threads take a whole number of at least 1", file=sys.stderr
        )
        return EXIT_USAGE
    if args.warm is not None and not Path(args.warm).is_file():
        say(f"kit: error: --warm {args.warm}: no such config file", file=sys.stderr)
        return EXIT_USAGE
    if args.warm is not None:
        from kit.provider import build_provider

        # Its mistakes (a key, a missing corpus) are said before a cluster starts for nothing.
        build_provider(load(argparse.Namespace(config=args.warm, overrides=[]))).check_config()
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
                say(line)
            if args.warm is not None:
                warmed = argparse.Namespace(target=cluster.address, config=args.warm, overrides=[])
                code = _cluster_warm(warmed)
                if code != EXIT_OK:
                    return code
            say(cluster.lines()[-1])
            wait_for_the_end()
    except ClusterError as exc:  # the port taken, say
        say(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    say("class ended: scheduler and workers stopped")
    return EXIT_OK


def _cluster_warm(args: argparse.Namespace) -> int:
    from kit.cluster import get_session, warm
    from kit.cluster._teacher import parallel_for
    from kit.config import parallel_section

    cfg = load(args)
    # Where: the target; how many envs to keep and for how long: the class's config.
    kept = {
        k: v for k, v in (cfg.get("parallel") or {}).items() if k.endswith("envs") or "idle" in k
    }
    merged = OmegaConf.merge(OmegaConf.structured(parallel_for(args.target)), kept)
    assert isinstance(merged, DictConfig)
    parallel = parallel_section(merged)
    with get_session(parallel) as session:
        warmed = warm(session, cfg)
    say(
        f"built {warmed['env']} on {warmed['workers']} workers in {warmed['seconds']:.1f} s "
        f"(env keys: {', '.join(warmed['keys'])}); it stays until parallel.max_envs pushes it "
        f"out or nobody uses it for {parallel.env_idle_timeout or 'ever'} s"
    )
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    """Add ``cluster`` and its commands to ``kit``'s commands."""
    cluster = commands.add_parser("cluster", help="job-queue clusters; a class's shared cluster")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", required=True)
    script = cluster_commands.add_parser(
        "script", help="print the job script the config would submit (submits nothing)"
    )
    with_config(script)
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
    with_config(warm_up)
    warm_up.set_defaults(handler=_cluster_warm)
