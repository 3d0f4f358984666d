"""A teacher's controls on a class's cluster, through the `kit cluster` commands: the runs,
their fair shares, stopping one, warming an env before the class arrives."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from distributed import Client

from kit.cluster._shared import list_runs
from tests.class_client import ROOT, attendee, reports, until
from tests.cluster.conftest import WORKERS
from tests.servers import DASK, dask_cluster, dask_port_range, release, stop
from tests.workloads import lines

KIT = str(Path(sys.executable).with_name("kit"))


def kit(*args: str, home: Path | None = None, user: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``kit`` as a user of its own: their config folder ``home``, their hub name ``user``."""
    environ = dict(os.environ, PYTHONPATH=str(ROOT))
    if home is not None:
        environ["XDG_CONFIG_HOME"] = str(home)
    if user:
        environ["JUPYTERHUB_USER"] = user
    return subprocess.run([KIT, *args], capture_output=True, text=True, env=environ, cwd=ROOT)


def gated(logs: Path, gate: Path, **job: Any) -> dict[str, Any]:
    """A job of 12 items whose last one waits for ``gate``: it runs until the test says so."""
    logs.mkdir()
    return {
        "items": 12,
        "log_dir": str(logs),
        "log_calls": True,
        "gate": str(gate),
        "gate_from": 11,
        **job,
    }


def test_the_teacher_lists_the_class_runs_and_stops_one_without_touching_the_others(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    alice = attendee(scheduler, gated(tmp_path / "a", gate, factor=3), user="alice")
    bob = attendee(
        scheduler, gated(tmp_path / "b", gate, factor=4, runner={"max_slots": 1}), user="bob"
    )
    until(lambda: len(watcher.run_on_scheduler(list_runs)["runs"]) == 2, "both runs to start")
    for who in "ab":
        until(lambda w=who: len(lines(tmp_path / w, "calls.log")) == 11, f"{who}'s first 11 items")
    listing = kit("cluster", "runs", scheduler)
    assert listing.returncode == 0, listing.stderr
    said = listing.stdout.splitlines()
    assert said[0] == "2 runs on 4 worker threads"
    assert said[1].split() == [
        "RUN",
        "USER",
        "HOST",
        "RUNNER",
        "ITEMS",
        "FAILED",
        "SLOTS",
        "ENV",
        "FOR",
    ]
    rows = {line.split()[1]: line.split() for line in said[2:4]}
    # Bob's max_slots caps his share; Alice takes the rest. Both wait on their last item.
    assert [rows["alice"][3], rows["alice"][6]] == ["tests.workloads.Affine", "3"]
    assert rows["bob"][6] == "1"
    assert all(row[4].endswith("/12") and row[4] != "12/12" for row in rows.values())
    assert said[4] == "2 envs on the workers" and all("held by 1 run" in s for s in said[5:])

    # Bob, calling himself the teacher, cannot cancel Alice's run: a name proves nothing.
    bobs = kit(
        "cluster", "cancel", scheduler, rows["alice"][0], home=tmp_path / "bob", user="teacher"
    )
    assert bobs.returncode == 7, bobs.stderr
    assert bobs.stderr.startswith(f"kit: refused: run {rows['alice'][0]} is alice's (")
    assert "no teacher yet (kit cluster claim)" in bobs.stderr
    teacher = tmp_path / "teacher"
    claimed = kit("cluster", "claim", scheduler, home=teacher, user="tina")
    assert claimed.returncode == 0, claimed.stderr
    assert claimed.stdout.startswith("tina@")
    (token,) = (teacher / "kit" / "classes").iterdir()
    assert token.stat().st_mode & 0o777 == 0o600
    assert (teacher / "kit" / "classes").stat().st_mode & 0o777 == 0o700
    again = kit("cluster", "claim", scheduler, home=tmp_path / "bob", user="bob")
    assert again.returncode == 7 and "already has a teacher: tina@" in again.stderr
    bobs = kit("cluster", "cancel", scheduler, rows["alice"][0], home=tmp_path / "bob")
    assert bobs.returncode == 7 and "no teacher yet" not in bobs.stderr
    assert len(watcher.run_on_scheduler(list_runs)["runs"]) == 2  # nothing was cancelled

    stopped = kit("cluster", "cancel", scheduler, rows["alice"][0][:5], home=teacher)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith(f"asked run {rows['alice'][0]} (alice@")
    assert ", as the teacher (tina@" in stopped.stdout  # from the token, not a name
    (report,) = reports(alice)
    assert (report["status"], report["failed"]) == ("cancelled", 0) and report["ok"] < 12
    assert any("cancelled on the cluster by the teacher (tina@" in w for w in report["warnings"])
    assert report["reason"].startswith("cancelled on the cluster by the teacher (tina@")

    unknown = kit("cluster", "cancel", scheduler, "zzz")
    assert unknown.returncode == 2
    assert (
        unknown.stderr == f"kit: error: no run 'zzz' on this cluster (runs now: {rows['bob'][0]})\n"
    )
    gate.touch()
    (report,) = reports(bob)
    assert (report["status"], report["ok"]) == ("completed", 12)
    assert watcher.run_on_scheduler(list_runs)["runs"] == []


def test_warming_builds_the_env_once_per_worker_before_the_class_uses_it(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    config = tmp_path / "class.yaml"
    config.write_text(
        "provider: {_target_: tests.workloads.Paced}\n"
        f"factor: 9\nsleep: 0.01\nballast_mb: 64\nlog_dir: {tmp_path}\n"
    )
    warmed = kit("cluster", "warm", scheduler, str(config))
    assert warmed.returncode == 0, warmed.stderr
    assert warmed.stdout.startswith("built kit-env:tests.workloads.Paced:")
    assert f"on {WORKERS * 2} workers" not in warmed.stdout  # threads are not workers
    assert len(lines(tmp_path, "setup.log")) == WORKERS
    job = {"items": 8, "factor": 9, "sleep": 0.01, "ballast_mb": 64, "log_dir": str(tmp_path)}
    assert [r["ok"] for r in reports(attendee(scheduler, job, user="carol"))] == [8]
    assert len(lines(tmp_path, "setup.log")) == WORKERS  # carol's run built nothing
    # The env's row: its short name and code fingerprint, idle, its owners, its memory.
    row = kit("cluster", "runs", scheduler).stdout.splitlines()[-1]
    found = re.fullmatch(
        r"workloads\.Paced:[0-9a-f]{6}-[0-9a-f]{6}  idle; owners (.+); (\d+) MiB a worker", row
    )
    assert found, row
    assert "carol" in found.group(1).split(", ")
    assert 60 <= int(found.group(2)) <= 200  # the 64 MiB it holds, and little else


def test_warming_a_cluster_started_a_moment_ago_waits_for_its_first_worker(
    tmp_path: Path,
) -> None:
    # The teacher's page starts `dask scheduler &` and `dask worker ... &`, then warms at once.
    config = tmp_path / "class.yaml"
    config.write_text(
        f"provider: {{_target_: tests.workloads.Paced}}\nfactor: 2\nlog_dir: {tmp_path}\n"
    )
    with dask_cluster(tmp_path, n_workers=0) as address, Client(address) as watcher:
        environ = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path))
        warming = subprocess.Popen(
            [KIT, "cluster", "warm", address, str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environ,
        )
        until(lambda: clients(watcher) >= 3, "kit cluster warm to connect")  # and ours, Dask's
        ports = [dask_port_range(), dask_port_range()]
        command = [DASK, "worker", address, "--no-dashboard", "--host", "127.0.0.1"]
        worker = subprocess.Popen(
            [*command, "--worker-port", ports[0], "--nanny-port", ports[1]],
            env=environ,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            out, err = warming.communicate(timeout=120)
        finally:
            stop([worker])
            release(ports)
    assert warming.returncode == 0, err
    assert " on 1 workers " in out
    assert len(lines(tmp_path, "setup.log")) == 1


def clients(watcher: Client) -> int:
    """How many clients the scheduler has (Dask's fire-and-forget one among them)."""
    return int(watcher.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.clients)))


def test_a_bad_seat_is_refused_on_the_scheduler_and_the_class_goes_on(
    scheduler: str, watcher: Client
) -> None:
    # One bad call used to be stored and fail every later run and command on the cluster.
    from kit.cluster._shared import ClusterLedger, join_run

    watcher.register_plugin(ClusterLedger())  # as a Kit session does (kept if there)
    good = {
        "run_id": "r-bad",
        "client": watcher.id,
        "user": "mallory",
        "host": "lab",
        "runner": "R",
        "env": "kit-env:m.P:1",
        "total": 10,
    }
    for bad, said in (
        ({"max_slots": "abc"}, "max_slots as a whole number"),
        ({"run_id": None}, "run_id as a string"),
        ({"client": "someone-else"}, "which is not connected to this scheduler"),
    ):
        try:
            watcher.run_on_scheduler(join_run, {**good, **bad})
        except (TypeError, ValueError) as exc:
            assert said in str(exc)
        else:
            raise AssertionError(f"{bad} was seated")
    assert watcher.run_on_scheduler(list_runs)["runs"] == []
    listing = kit("cluster", "runs", scheduler)
    assert listing.returncode == 0, listing.stderr


def test_bad_holds_and_cancels_are_refused_and_nothing_is_stored(
    scheduler: str, watcher: Client
) -> None:
    from kit.cluster._shared import ClusterLedger, cancel_run, hold_env, release_env

    watcher.register_plugin(ClusterLedger())
    env = "kit-env:m.P:1-2"
    good = (env, "hold-1", watcher.id, 2, None, "mallory")
    for index, (bad, said) in enumerate(
        (
            ("not-an-env", "names an env (kit-env:...)"),
            ("", "needs a hold id"),
            ("someone-else", "which is not connected to this scheduler"),
            ("abc", "max_envs as a whole number of at least 1"),
            (-1, "idle_timeout as seconds above 0 or None"),
            (None, "needs its user as a string"),
        )
    ):
        args = list(good)
        args[index] = bad
        try:
            watcher.run_on_scheduler(hold_env, *args)
        except (TypeError, ValueError) as exc:
            assert said in str(exc), exc
        else:
            raise AssertionError(f"a hold with {bad!r} was taken")
    assert watcher.run_on_scheduler(list_runs)["envs"] == {}
    for args in (("hold-1", "yes"), (None, False)):
        with pytest.raises(TypeError, match="takes a hold id and a bool"):
            watcher.run_on_scheduler(release_env, *args)
    for args in ((None, "key"), ("", "key"), ("r", None)):
        with pytest.raises(TypeError, match="cancelling takes a run id and a key"):
            watcher.run_on_scheduler(cancel_run, *args)


def test_a_run_is_cancelled_by_its_own_key_and_by_nobody_elses(
    scheduler: str, watcher: Client
) -> None:
    from kit.cluster._keys import digest
    from kit.cluster._shared import ClusterLedger, cancel_run, join_run

    watcher.register_plugin(ClusterLedger())
    seat = {"run_id": "r-own", "client": watcher.id, "user": "mallory", "host": "lab",
            "runner": "R", "env": "kit-env:m.P:1-2", "total": 10}  # fmt: skip
    seat["owner"] = digest("mine")
    watcher.run_on_scheduler(join_run, seat)
    try:
        watcher.run_on_scheduler(cancel_run, "r-own", "not mine")
    except PermissionError as exc:
        assert str(exc).startswith("run r-own is mallory's (lab, R): only its own notebook")
    else:
        raise AssertionError("another key cancelled the run")
    (listed,) = watcher.run_on_scheduler(list_runs)["runs"]
    assert listed["cancel_by"] is None and "owner" not in listed  # the digest is not shown
    said = watcher.run_on_scheduler(cancel_run, "r-own", "mine")
    assert said["cancel_by"] == "its owner (mallory)"
