"""What a teacher does with a class's cluster: list its runs, stop one, warm an env.

``kit cluster runs``, ``kit cluster cancel`` and ``kit cluster warm`` call
these; the cluster panel widget shows :func:`class_runs` and has the board's
buttons (cancel, warm) too. A target is a
scheduler address (``tcp://host:8786``) or a YAML config whose ``parallel``
section says how to reach it (the address and, for TLS, the certificates).
"""

from __future__ import annotations

import functools
import socket
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit.config import ParallelConfig, load_config, parallel_section


def parallel_for(target: str) -> ParallelConfig:
    """Return the ``parallel`` section that reaches ``target`` (an address or a config file).

    Examples
    --------
    >>> parallel_for("tcp://127.0.0.1:8786").address
    'tcp://127.0.0.1:8786'
    """
    path = Path(target).expanduser()
    if path.is_file():
        section = load_config(path).get("parallel") or {}
        merged = OmegaConf.merge({"env": "remote"}, section)
        assert isinstance(merged, DictConfig)
        parallel = parallel_section(merged)
    else:
        parallel = parallel_section({"env": "remote", "address": target})
    return parallel


def connect(target: str) -> Any:
    """Return a Dask client of the cluster at ``target`` (the caller closes it)."""
    from kit.cluster._builders import start

    client, _ = start(parallel_for(target))
    return client


def class_runs(client: Any) -> dict[str, Any]:
    """Return every run on the cluster (its seat), the envs with their holders, the threads.

    Examples
    --------
    >>> from distributed import Client, LocalCluster
    >>> with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
    ...                   dashboard_address=None) as cluster, Client(cluster) as client:
    ...     class_runs(client)
    {'threads': 2, 'runs': [], 'envs': {}}
    """
    from kit.cluster._shared import list_runs

    listing: dict[str, Any] = client.run_on_scheduler(list_runs)
    return listing


#: The columns of the class's runs, as ``kit cluster runs`` and the cluster panel show them.
RUN_COLUMNS = ("run", "user", "host", "runner", "items", "failed", "slots", "env", "for")


def run_rows(listing: dict[str, Any], now: float | None = None) -> list[dict[str, str]]:
    """Return one row per run of :func:`class_runs`, oldest first, in :data:`RUN_COLUMNS`.

    Examples
    --------
    >>> seat = {"run_id": "1a2b3c", "user": "alice", "host": "lab", "runner": "Decode",
    ...         "env": "kit-env:m.Whisper:9f8e7d6c5b4a", "total": 200, "done": 50, "failed": 1,
    ...         "chunks_out": 4, "share": 2, "started": 0.0, "cancel_by": "bob@lab"}
    >>> run_rows({"threads": 4, "runs": [seat], "envs": {}}, now=75)[0]["runner"]
    'Decode (cancelling)'
    """
    now = time.time() if now is None else now
    rows = []
    for seat in sorted(listing["runs"], key=lambda s: s["started"]):
        stopping = " (cancelling)" if seat.get("cancel_by") else ""
        rows.append(
            {
                "run": seat["run_id"],
                "user": seat["user"],
                "host": seat["host"],
                "runner": seat["runner"] + stopping,
                "items": f"{seat['done']}/{seat['total']}",
                "failed": str(seat["failed"]),
                "slots": str(seat["share"]),
                "env": _env(seat["env"]),
                "for": _age(now - seat["started"]),
            }
        )
    return rows


def env_rows(listing: dict[str, Any]) -> list[tuple[str, str]]:
    """Return each env on the workers: its short name and fingerprint, who holds and owns it.

    The owners are the users whose runs held the env since it was built;
    the memory is what a worker's process grew by while it built the env
    (about: other work of that process counts too).

    Examples
    --------
    >>> name = "kit-env:m.Whisper:9f8e7d6c5b4a-0a1b2c3d4e5f"
    >>> info = {name: {"users": ["alice", "bob"], "memory": 41 * 2**20}}
    >>> env_rows({"threads": 4, "runs": [], "envs": {name: ["c1"]}, "env_info": info})
    [('m.Whisper:9f8e7d-0a1b2c', 'held by 1 run; owners alice, bob; 41 MiB a worker')]
    >>> env_rows({"threads": 4, "runs": [], "envs": {name: []}})
    [('m.Whisper:9f8e7d-0a1b2c', 'idle')]
    """
    rows = []
    for name, holders in sorted(listing["envs"].items()):
        info = listing.get("env_info", {}).get(name, {})
        said = [f"held by {_count(len(holders), 'run')}" if holders else "idle"]
        if info.get("users"):
            said.append(f"owner{'s' if len(info['users']) > 1 else ''} {', '.join(info['users'])}")
        if info.get("memory") is not None:
            said.append(f"{info['memory'] / 2**20:,.0f} MiB a worker")
        rows.append((_env(name), "; ".join(said)))
    return rows


def runs_headline(listing: dict[str, Any]) -> str:
    """Return the listing's first line, how many runs on how many threads.

    Examples
    --------
    >>> runs_headline({"threads": 4, "runs": [{}, {}], "envs": {}})
    '2 runs on 4 worker threads'
    """
    return f"{_count(len(listing['runs']), 'run')} on {listing['threads']} worker threads"


def runs_table(listing: dict[str, Any], now: float | None = None) -> str:
    """Draw :func:`class_runs` as the lines ``kit cluster runs`` prints.

    Examples
    --------
    >>> seat = {"run_id": "1a2b3c", "user": "alice", "host": "lab", "runner": "Decode",
    ...         "env": "kit-env:m.Whisper:9f8e7d6c5b4a", "total": 200, "done": 50, "failed": 1,
    ...         "chunks_out": 4, "share": 2, "started": 0.0, "cancel_by": None}
    >>> print(runs_table({"threads": 4, "runs": [seat], "envs": {seat["env"]: ["c1"]}}, now=75))
    1 run on 4 worker threads
    RUN     USER   HOST  RUNNER  ITEMS   FAILED  SLOTS  ENV                   FOR
    1a2b3c  alice  lab   Decode  50/200  1       2      m.Whisper:9f8e7d6c5b  1m15s
    1 env on the workers
    m.Whisper:9f8e7d6c5b  held by 1 run
    """
    lines = [runs_headline(listing)]
    runs = run_rows(listing, now)
    if runs:
        rows = [[c.upper() for c in RUN_COLUMNS], *([row[c] for c in RUN_COLUMNS] for row in runs)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(RUN_COLUMNS))]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
    envs = env_rows(listing)
    lines.append(f"{_count(len(envs), 'env')} on the workers")
    width = max((len(name) for name, _ in envs), default=0)
    lines += [f"{name.ljust(width)}  {held}" for name, held in envs]
    return "\n".join(lines)


def cancel(client: Any, run_id: str, key: str | None = None) -> dict[str, Any]:
    """Ask the run ``run_id`` (or the one whose id starts so) to stop; return its seat.

    ``key`` is the run's own key (its session's ``run_keys``) or the
    class's teacher token; without one, this user's token for the cluster,
    if they claimed it (:func:`claim`).

    Raises
    ------
    KeyError
        Naming the runs on the cluster, when none or several match.
    PermissionError
        Naming the run's owner, when the key is neither the run's nor the teacher's.

    Examples
    --------
    >>> from distributed import Client, LocalCluster
    >>> cluster = LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    >>> client = Client(cluster)
    >>> cancel(client, "1a2b")  # no Kit session ever connected: no run to cancel
    Traceback (most recent call last):
    RuntimeError: this scheduler has no Kit ledger; it is registered when a Kit session connects
    >>> client.close(); cluster.close()
    """
    from kit.cluster._keys import read_token
    from kit.cluster._shared import cancel_run

    if key is None:
        key = read_token(client.scheduler_info()["id"]) or ""
    seat: dict[str, Any] = client.run_on_scheduler(functools.partial(cancel_run, run_id, key))
    return seat


def warm(session: Any, cfg: Any) -> dict[str, Any]:
    """Build the env of ``cfg``'s provider on every worker of ``session``'s cluster now.

    What the teacher does before the class arrives (``kit cluster warm``, the
    board's Warm button): the attendees' first runs find it built. It stays
    until ``parallel.max_envs`` pushes it out or nobody holds it for
    ``parallel.env_idle_timeout`` seconds. Returns the env's name, its keys,
    how many workers have it and the seconds it took.

    Examples
    --------
    >>> import kit
    >>> session = kit.cluster.get_session({"env": "local", "n_workers": 1,
    ...                                    "options": {"processes": False}})
    >>> cfg = kit.load_config("kit/examples/quickstart.yaml")
    >>> warmed = warm(session, cfg)
    >>> warmed["workers"], warmed["env"].startswith("kit-env:kit.examples.quickstart.ModelProvider")
    (1, True)
    >>> session.close()
    """
    from kit.provider import build_provider

    provider = build_provider(cfg)
    provider.check_config()  # a typo or a missing corpus is said here, not by every worker
    began = time.perf_counter()
    name, keys = session.attach(provider)
    session.release(name)
    return {
        "env": name,
        "keys": list(keys),
        "workers": len(session.client.scheduler_info()["workers"]),
        "seconds": time.perf_counter() - began,
    }


def claim(client: Any) -> tuple[str, Path]:
    """Make this user the teacher of the class on ``client``'s cluster; return who and the token.

    The token is made here, its digest kept by the scheduler, the token
    itself in a file only this user can read (:func:`~kit.cluster._keys.token_path`).
    Claiming again with that file is a no-op.

    Raises
    ------
    PermissionError
        Naming who claimed the class first, when someone else did.
    """
    from kit.cluster._keys import digest, new_key, read_token, write_token
    from kit.cluster._shared import ClusterLedger, claim_teacher

    scheduler_id = client.scheduler_info()["id"]
    token = read_token(scheduler_id) or new_key()
    client.register_plugin(ClusterLedger())  # kept if a Kit session registered it already
    label = f"{_who()}@{socket.gethostname()}"
    holder: str = client.run_on_scheduler(functools.partial(claim_teacher, digest(token), label))
    return holder, write_token(scheduler_id, token)


def _who() -> str:
    from kit.cluster._seats import who

    return who()


def _env(name: str) -> str:
    """Return an env name short: provider, config hash and code fingerprint, first digits.

    Examples
    --------
    >>> _env("kit-env:pkg.mod.Provider:9f8e7d6c5b4a-0a1b2c3d4e5f")
    'mod.Provider:9f8e7d-0a1b2c'
    """
    _, path, digest = name.split(":", 2)
    config, _, code = digest.partition("-")
    short = f"{config[:6]}-{code[:6]}" if code else config[:10]
    return f"{'.'.join(path.split('.')[-2:])}:{short}"


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
