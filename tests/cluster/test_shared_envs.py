"""A class on one scheduler: attendees in processes of their own share envs, and never break
each other's runs by switching engines, leaving, or dying."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from distributed import Client

from kit.cluster._shared import held_envs
from tests.class_client import attendee, reports, until
from tests.cluster.conftest import WORKERS
from tests.workloads import lines


def test_switching_engines_never_tears_down_an_env_another_attendee_holds(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    logs = {who: tmp_path / who for who in ("alice", "bob")}
    for folder in logs.values():
        folder.mkdir()
    gate = tmp_path / "gate"
    # Alice's run is held on its last item: it holds its env, mid-run.
    alice = attendee(
        scheduler,
        {
            "items": 40,
            "factor": 3,
            "log_dir": str(logs["alice"]),
            "log_calls": True,
            "gate": str(gate),
            "gate_from": 39,
        },
    )
    until(lambda: len(lines(logs["alice"], "calls.log")) == 39, "alice's first 39 items")
    alices_env = set(watcher.run_on_scheduler(held_envs))
    # Bob goes through three engines with max_envs 2, after one run of Alice's engine.
    bob = attendee(
        scheduler,
        *({"items": 8, "factor": factor, "log_dir": str(logs["bob"])} for factor in (4, 5, 6, 7)),
    )
    assert [report["failed"] for report in reports(bob)] == [0, 0, 0, 0]
    held = watcher.run_on_scheduler(held_envs)
    assert alices_env <= set(held), "Bob's engines tore down the env Alice's run holds"
    assert len(held) == 2, held  # Alice's, held (over the bound), and Bob's latest
    gate.touch()
    (report,) = reports(alice)
    assert (report["ok"], report["failed"]) == (40, 0), report["errors"]
    # Each worker built Alice's env once: her run never had to build it again.
    assert len([line for line in lines(logs["alice"], "setup.log") if " 3 " in line]) == WORKERS


def test_attendees_with_one_config_build_the_env_once_per_worker(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    job = {"items": 24, "factor": 2, "sleep": 0.01, "log_dir": str(tmp_path)}
    class_of_three = [attendee(scheduler, job, job) for _ in range(3)]
    for proc in class_of_three:
        assert [(r["ok"], r["failed"]) for r in reports(proc)] == [(24, 0), (24, 0)]
    assert len(lines(tmp_path, "setup.log")) == WORKERS  # not 3 attendees x 2 workers
    assert list(watcher.run_on_scheduler(held_envs).values()) == [[]]  # nobody holds it now


def test_an_attendee_that_dies_mid_run_lets_go_of_its_env(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"  # never opened: the run is killed while it waits
    job = {"items": 8, "factor": 3, "log_dir": str(tmp_path), "log_calls": True}
    dying = attendee(scheduler, {**job, "gate": str(gate), "gate_from": 7})
    until(lambda: len(lines(tmp_path, "calls.log")) == 7, "the first 7 items")
    (held,) = watcher.run_on_scheduler(held_envs).values()
    assert len(held) == 1
    dying.send_signal(signal.SIGKILL)
    dying.wait()
    until(lambda: list(watcher.run_on_scheduler(held_envs).values()) == [[]], "the hold to go")
    # Its env is anybody's to evict now: two other engines with max_envs 2 push it out.
    other = attendee(scheduler, *({"items": 4, "factor": f} for f in (4, 5)))
    assert [report["failed"] for report in reports(other)] == [0, 0]
    assert len(watcher.run_on_scheduler(held_envs)) == 2


def test_an_env_nobody_holds_for_its_idle_timeout_is_torn_down(
    scheduler: str, watcher: Client, tmp_path: Path
) -> None:
    # Each worker's teardown takes half a second: the env counts as there until it has ended.
    job = {
        "items": 4,
        "factor": 3,
        "log_dir": str(tmp_path),
        "teardown_sleep": 0.5,
        "parallel": {"env_idle_timeout": 1},
    }
    assert reports(attendee(scheduler, job))[0]["failed"] == 0
    until(lambda: watcher.run_on_scheduler(held_envs) == {}, "the idle env to be torn down")
    assert len(lines(tmp_path, "teardown.log")) == WORKERS


#: An attendee's notebook, as a script: its own provider (in ``__main__``) and a run of it;
#: then the provider's cell again with other code (the attendee fixed it), and a run.
OWN_PROVIDER = """
import sys
import kit
from kit import EnvironmentProvider, Runner

address, mine = sys.argv[1:]
parallel = {"env": "remote", "address": address}


class Vocabulary(EnvironmentProvider):
    def build_env_local(self):
        return {"words": mine}

    def make_worker_setup_fn(self):
        return lambda: {"words": mine}


class Count(Runner):
    @staticmethod
    def forward(idx, words):
        return words


print(sorted(set(Count(Vocabulary({"n": 1}), parallel=parallel).run(range(8)).records)))


class Vocabulary(EnvironmentProvider):
    def build_env_local(self):
        return {"words": mine + " fixed"}

    def make_worker_setup_fn(self):
        return lambda: {"words": mine + " fixed"}


print(sorted(set(Count(Vocabulary({"n": 1}), parallel=parallel).run(range(8)).records)))
kit.cluster.shutdown()
"""


def test_an_attendees_own_provider_never_runs_in_another_attendees_run(
    scheduler: str, tmp_path: Path
) -> None:
    """Two notebooks define a provider of one name and config; each gets its own env, and a
    provider defined again (its code fixed) builds anew instead of reusing the old env."""
    script = tmp_path / "notebook.py"
    script.write_text(OWN_PROVIDER)
    runs = {
        who: subprocess.Popen(
            [sys.executable, str(script), scheduler, who], stdout=subprocess.PIPE, text=True
        )
        for who in ("alice", "bob")
    }
    for who, proc in runs.items():
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        assert out.splitlines() == [f"['{who}']", f"['{who} fixed']"]


#: Four attendees' notebooks with one provider, each defined in the notebook itself.
SAME_PROVIDER = """
import os
import sys
import time
import kit
from kit import EnvironmentProvider, Runner

address, log = sys.argv[1:]
parallel = {"env": "remote", "address": address}


def build():
    with open(log, "a") as out:
        out.write(f"{os.getpid()}\\n")
    time.sleep(1)  # a model loading: the attendees' first holds overlap
    return {"words": "shared"}


class Vocabulary(EnvironmentProvider):
    def build_env_local(self):
        return build()

    def make_worker_setup_fn(self):
        return build


class Count(Runner):
    @staticmethod
    def forward(idx, words):
        return words


print(sorted(set(Count(Vocabulary({"n": 1}), parallel=parallel).run(range(8)).records)))
kit.cluster.shutdown()
"""


def test_attendees_defining_one_provider_in_their_notebooks_build_it_once_per_worker(
    scheduler: str, tmp_path: Path
) -> None:
    script, log = tmp_path / "notebook.py", tmp_path / "builds.log"
    script.write_text(SAME_PROVIDER)
    class_of_four = [
        subprocess.Popen(
            [sys.executable, str(script), scheduler, str(log)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    for proc in class_of_four:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        assert out.splitlines() == ["['shared']"]
    assert len(log.read_text().splitlines()) == WORKERS  # not 4 attendees x 2 workers


#: Bob's notebook: a provider named like the quickstart's, with his own code.
SPOOF = """
import sys
import kit
from kit.examples import quickstart

address = sys.argv[1]


class Fake:
    built_by = 0

    def __call__(self, x):
        return -999.0


class ModelProvider(kit.EnvironmentProvider):
    __module__ = "kit.examples.quickstart"

    def build_env_local(self):
        return {"model": Fake()}

    def make_worker_setup_fn(self):
        return self.build_env_local


# Alice's overrides: one config, so only the code tells the two envs apart.
overrides = [f"parallel.address={address}", "parallel.env=remote"]
overrides += ["items.stop=4", "output_dir=null"]
config = quickstart.quickstart_config(overrides)
result = quickstart.Evaluate(ModelProvider(config), parallel=config.parallel).run(range(4))
print(sorted({record["y"] for record in result.records}))
kit.cluster.shutdown()
"""


def test_a_provider_named_like_another_never_gives_its_env_to_the_other(
    scheduler: str, tmp_path: Path
) -> None:
    script = tmp_path / "bob.py"
    script.write_text(SPOOF)
    bob = subprocess.run(
        [sys.executable, str(script), scheduler], capture_output=True, text=True, timeout=300
    )
    assert bob.returncode == 0, bob.stderr
    assert bob.stdout.splitlines() == ["[-999.0]"]
    alice = subprocess.run(
        [
            sys.executable,
            "-m",
            "kit.examples.quickstart",
            f"parallel.address={scheduler}",
            "parallel.env=remote",
            "items.stop=4",
            "output_dir=null",  # runs/Evaluate-<hash> in the scratch folder
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert alice.returncode == 0, alice.stderr
    assert "-999" not in alice.stdout
