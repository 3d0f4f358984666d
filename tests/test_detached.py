"""Detached runs: a driver that outlives the notebook kernel; attach, status, cancel."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import kit
from kit.cluster._process import alive
from tests.kernels import start_kernel
from tests.workloads import Affine, ToyProvider, expected, reads_back, toy_config

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]

KERNEL_CODE = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    import kit
    from omegaconf import OmegaConf

    # Defined in the notebook itself: shipped to the driver and workers by value.
    class Slow(kit.EnvironmentProvider):
        def build_env_local(self):
            return {{"step": self.config.step}}
        def make_worker_setup_fn(self):
            step = self.config.step
            return lambda: {{"step": step}}

    class Times(kit.Runner):
        @staticmethod
        def forward(idx, step):
            import time
            time.sleep(step)
            return {{"idx": idx, "double": 2 * idx}}

    runner = Times(Slow(OmegaConf.create({{"step": 0.02}})),
                   parallel={{"env": "local", "n_workers": 2}}, output_dir={out!r})
    run = runner.submit(range(300), detached=True)
    print("KERNEL", os.getpid(), "DRIVER", run.snapshot().driver["pid"])
    print("PROGRESS", run.progress.total)
    """
)


def test_a_detached_run_survives_its_kernel_being_killed(tmp_path: Path) -> None:
    pytest.importorskip("jupyter_client")
    out = tmp_path / "run"
    manager, client = start_kernel(tmp_path)
    try:
        printed: list[str] = []
        reply = client.execute_interactive(
            KERNEL_CODE.format(root=str(ROOT), out=str(out)),
            timeout=120,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")),
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        words = "".join(printed).split()
        kernel_pid, driver_pid = int(words[1]), int(words[3])
        assert words[4:6] == ["PROGRESS", "300"]  # known at once, not "0/0" while starting
    finally:
        client.stop_channels()
    run = kit.attach(out)
    deadline = time.monotonic() + 60
    while run.progress.done == 0:
        assert time.monotonic() < deadline, "the detached run made no progress"
        time.sleep(0.05)
    manager.shutdown_kernel(now=True)  # kill the kernel mid-run
    assert not alive(kernel_pid)
    assert run.progress.done < 300, "the run ended before the kernel was killed"
    assert alive(driver_pid)

    # Attach from this process (another one than the kernel) and get everything.
    result = kit.attach(out).result(timeout=120)
    assert result.status == "completed"
    assert result.records == [{"idx": i, "double": 2 * i} for i in range(300)]
    assert result.stats.ok == 300
    assert dict(kit.attach(out))[7] == {"idx": 7, "double": 14}


def test_cancel_stops_a_detached_run_and_a_later_run_resumes(tmp_path: Path) -> None:
    out, gate = tmp_path / "run", tmp_path / "gate"
    # Items from 200 on wait for the gate: the run is still going when the cancel comes,
    # however long `kit status` and `kit cancel` take to start on a busy machine.
    runner = Affine(
        ToyProvider(toy_config(sleep=0.02, gate=str(gate), gate_from=200)),
        parallel={"env": "local", "n_workers": 2},
        output_dir=out,
    )
    run = runner.submit(range(400), detached=True)
    deadline = time.monotonic() + 60
    while run.progress.done < 20:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    status = subprocess.run(
        [sys.executable, "-m", "kit", "status", str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"{out}: running" in status
    assert "cluster: LocalCluster (local), scheduler tls://127.0.0.1:" in status
    assert "items:" in status and "/400" in status
    cancel = subprocess.run(
        [sys.executable, "-m", "kit", "cancel", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"{out}: cancelled (" in cancel.stdout and "/400 items" in cancel.stdout
    assert "completed chunks are kept, run it again to resume" in cancel.stdout
    partial = kit.attach(out).result(timeout=10)
    assert partial.status == "cancelled" and 20 <= partial.stats.ok < 400

    gate.touch()
    again = runner.submit(range(400), detached=True).result(timeout=120)
    assert again.records == expected(range(400))
    assert again.stats.resumed >= partial.stats.ok
    reads_back(again, out)


def test_a_detached_run_needs_an_output_dir() -> None:
    with pytest.raises(ValueError, match="a detached run needs an output_dir"):
        Affine(ToyProvider(toy_config())).submit(range(3), detached=True)


def test_attach_to_a_folder_without_a_run_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="holds no Kit run"):
        kit.attach(tmp_path)


def test_a_driver_that_dies_is_reported_with_its_log(tmp_path: Path) -> None:
    out = tmp_path / "run"
    runner = Affine(ToyProvider(toy_config(sleep=0.05)), output_dir=out, chunk_size=2)
    run = runner.submit(range(200), detached=True)
    deadline = time.monotonic() + 60
    while run.progress.done < 4:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    import os
    import signal

    os.kill(int(json.loads((out / "driver.json").read_text())["pid"]), signal.SIGKILL)
    with pytest.raises(
        kit.errors.DriverLostError, match="ended without finishing; run again to resume"
    ):
        run.result(timeout=30)
    assert kit.attach(out).snapshot().lost is kit.detached.Lost.DIED


HOLDS_THE_LOCK = textwrap.dedent(
    """
    import sys, time
    from kit.store._store import RunStore
    store = RunStore(sys.argv[1])
    store.lock()
    print("held", flush=True)
    sys.stdin.readline()  # until the test lets go
    """
)


def holding_the_lock(folder: Path) -> subprocess.Popen[str]:
    """Another process, holding ``folder``'s lock until a line on its stdin."""
    other = subprocess.Popen(
        [sys.executable, "-c", HOLDS_THE_LOCK, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdout is not None and other.stdout.readline() == "held\n"
    return other


def test_a_driver_waits_out_a_second_submit_holding_the_lock_for_a_moment(tmp_path: Path) -> None:
    # A second `kit submit` into the folder takes the lock to read driver.json and refuse:
    # a driver whose run met it there failed, and the folder was left with no run.
    from kit._driver import take_lock
    from kit.store._store import RunStore

    other = holding_the_lock(tmp_path)
    store = RunStore(tmp_path)
    with pytest.raises(kit.errors.StoreError, match="another run is writing to"):
        take_lock(store, deadline=time.monotonic())  # past its wait: the refusal stands
    import threading

    waiting = threading.Thread(target=take_lock, args=(store, time.monotonic() + 60))
    waiting.start()
    assert other.stdin is not None
    other.stdin.write("\n")
    other.stdin.flush()  # it lets go while the driver waits
    waiting.join(timeout=60)
    assert not waiting.is_alive() and store.busy() and other.wait(timeout=60) == 0
    store.lock()  # held already: taking it again is nothing
    store.unlock()
    assert not store.busy()


def test_a_sweeps_driver_waits_out_a_second_submit_holding_the_lock_for_a_moment(
    tmp_path: Path,
) -> None:
    # As a run's driver does (above): the sweep's driver met the second submit's lock
    # and failed, leaving the folder with no sweep.
    import threading

    from kit._driver import submit_waiting
    from kit._sweeps.request import SweepRequest

    config = tmp_path / "poly.yaml"
    config.write_text(
        "provider: {_target_: kit.examples.quickstart.ModelProvider}\n"
        "runner: {_target_: kit.examples.quickstart.Evaluate}\n"
        "model: {coefficients: [0.0, 1.0], work_seconds: 0.0}\n"
        "items: {start: 0, stop: 4}\nparallel: {env: inline}\n"
    )
    folder = tmp_path / "sweep"
    folder.mkdir()
    request = SweepRequest(str(config), ("items.stop=2,4",), folder, 1)
    other = holding_the_lock(folder)
    with pytest.raises(kit.errors.StoreError, match="another run is writing to"):
        submit_waiting(request, folder, deadline=time.monotonic())  # past its wait
    started: list[object] = []
    waiting = threading.Thread(
        target=lambda: started.append(submit_waiting(request, folder, time.monotonic() + 60))
    )
    waiting.start()
    assert other.stdin is not None
    other.stdin.write("\n")
    other.stdin.flush()  # it lets go while the driver waits
    waiting.join(timeout=60)
    assert not waiting.is_alive() and other.wait(timeout=60) == 0
    result = started[0].join()  # type: ignore[attr-defined]
    assert [r.stats.ok for r in result.results] == [2, 4]
