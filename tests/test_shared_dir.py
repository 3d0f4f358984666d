"""What a writer of a shared run directory cannot make its reader do.

Whoever may write a run directory (a colleague, a compromised job) can edit
any file there, plant links and name processes. Reading or resuming it must
still never run their code, write through their links or signal their
processes; and a run that reports an item done must give it back when read.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import socket
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

import kit
from kit._base.errors import KitError
from kit.detached._run import DriverIdentity, signal_driver, spawn_driver
from kit.errors import StoreError, StoreWarning
from kit.store._results import read_result
from kit.store._store import LEDGER, RunStore
from tests.workloads import Affine, ToyProvider, Tripwire, expected, reads_back, toy_config


def completed_run(out: Path, n: int = 10, chunk_size: int = 5) -> None:
    result = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=chunk_size).run(range(n))
    assert result.records == expected(range(n))


def plant_pickle(out: Path, marker: Path) -> None:
    """What an attacker does: switch the manifest to pickle, commit a chunk of their own."""
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["record_format"] = "pickle"
    (out / "manifest.json").write_text(json.dumps(manifest))
    chunk = out / "chunks" / "0000000000-0000000005.pkl"
    chunk.write_bytes(pickle.dumps(Tripwire(str(marker))))
    entry = {
        "file": chunk.name,
        "start": 0,
        "stop": 5,
        "size": chunk.stat().st_size,
        "sha256": hashlib.sha256(chunk.read_bytes()).hexdigest(),
    }
    with (out / LEDGER).open("a") as fh:
        fh.write(json.dumps(entry) + "\n")


def test_a_directory_switched_to_pickle_is_read_without_running_its_code(tmp_path: Path) -> None:
    out, marker = tmp_path / "run", tmp_path / "executed"
    completed_run(out)
    plant_pickle(out, marker)
    run = kit.attach(out)
    assert run.status is kit.RunStatus.COMPLETED
    for read in (run.result, lambda: list(run), lambda: read_result(out)):
        with pytest.raises(StoreError) as info:
            read()
        assert "stored as pickle files, and reading them runs code" in str(info.value)
        assert "kit.attach(..., allow_pickle=True)" in str(info.value)
    with pytest.raises(StoreError, match=r"set runner\.record_format=pickle to resume it"):
        Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    assert not marker.exists()


def test_a_pickle_others_may_change_is_not_read_even_when_allowed(tmp_path: Path) -> None:
    out, marker = tmp_path / "run", tmp_path / "executed"
    completed_run(out)
    plant_pickle(out, marker)
    (out / "chunks" / "0000000000-0000000005.pkl").chmod(0o664)
    with pytest.warns(StoreWarning, match=r"may be changed by other users \(mode 664\)"):
        result = kit.attach(out, allow_pickle=True).result()
    assert not marker.exists()
    assert result.records == expected(range(10))  # the run's own chunks, read as data


@pytest.mark.parametrize(
    "name",
    [".lock", "events.jsonl", LEDGER, "errors.jsonl", "manifest.json", "result.json", "chunks"],
)
@pytest.mark.parametrize("resume", [True, False])
def test_a_planted_link_is_refused_and_its_target_left_alone(
    tmp_path: Path, name: str, resume: bool
) -> None:
    out = tmp_path / "run"
    completed_run(out)
    victim = tmp_path / "victim"
    if name == "chunks":
        victim.mkdir()
        (victim / "thesis.tex").write_text("precious")
    else:
        victim.write_text("precious")
    link = out / name
    if link.is_dir():
        import shutil

        shutil.rmtree(link)
    else:
        link.unlink(missing_ok=True)
    link.symlink_to(victim)
    runner = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5, resume=resume)
    with pytest.raises(KitError) as info:
        runner.run(range(10))
    assert str(info.value).startswith(f"{link} is a symbolic link; Kit does not follow links")
    if name == "chunks":
        assert [p.name for p in victim.iterdir()] == ["thesis.tex"]
        assert (victim / "thesis.tex").read_text() == "precious"
    else:
        assert victim.read_text() == "precious"


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this user that is not a driver (its pid and start time are public)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
    )
    # Popen returns while the child may still be inside exec (its command line
    # reads empty until the new program's arguments are laid out); a busy
    # machine stretches that window. Tests look at a process that runs.
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    yield proc
    proc.kill()
    proc.wait()


def forged_driver(out: Path, pid: int) -> Path:
    out.mkdir(exist_ok=True)
    path = out / "driver.json"
    record = {
        "pid": pid,
        "host": socket.gethostname(),
        "created": psutil.Process(pid).create_time(),
    }
    path.write_text(json.dumps(record))
    return path


def test_cancel_refuses_a_forged_driver_that_does_not_hold_the_runs_lock(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    out = tmp_path / "run"
    completed_run(out)
    forged_driver(out, bystander.pid)
    with pytest.raises(StoreError) as info:
        kit.attach(out).cancel(timeout=1)
    assert str(info.value) == (
        f"process {bystander.pid}, named by {out / 'driver.json'}, is not Kit's driver of {out}; "
        "nothing was signalled"
    )
    live = RunStore(out)
    live.lock()  # as a run of this process would
    try:
        with pytest.raises(StoreError) as info:
            kit.attach(out).cancel(timeout=1)
    finally:
        live.unlock()
    assert str(info.value) == (
        f"process {bystander.pid}, named by {out / 'driver.json'}, does not hold the run's lock "
        f"(process {os.getpid()} does), so Kit cannot prove it is this run's driver; "
        "nothing was signalled"
    )
    assert bystander.poll() is None


def test_cancel_refuses_a_driver_file_others_may_change(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    out = tmp_path / "run"
    forged_driver(out, bystander.pid).chmod(0o666)
    with pytest.raises(StoreError, match=r"may be changed by other users \(mode 666\), so it may"):
        kit.attach(out).cancel(timeout=1)
    assert bystander.poll() is None


def test_a_torn_last_ledger_line_is_cut_and_its_chunk_run_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    completed_run(out, n=12, chunk_size=3)
    ledger = out / LEDGER
    lines = ledger.read_text().splitlines(keepends=True)
    # The disk filled in the middle of the last commit's line.
    ledger.write_text("".join(lines[:-1]) + lines[-1][:25])
    runner = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=3)
    with pytest.warns(StoreWarning, match="0000000009-0000000012.jsonl"):  # named by no line
        again = runner.run(range(12))
    assert again.records == expected(range(12)) and again.stats.resumed == 9
    assert all(json.loads(line) for line in ledger.read_text().splitlines())
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        back = read_result(out)
    assert back.status == again.status == "completed" and back.records == again.records


def test_reading_back_a_run_missing_a_chunk_is_not_completed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    completed_run(out)
    (out / "chunks" / "0000000005-0000000010.jsonl").unlink()
    with pytest.warns(StoreWarning, match="is missing"):
        back = read_result(out)
    assert back.status == "error"


def test_the_lock_holder_is_read_from_the_kernel(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    assert store.lock_holder() is None
    store.lock()
    try:
        (tmp_path / "run" / ".lock").write_text("1")  # what the file says does not count
        assert RunStore(tmp_path / "run").lock_holder() == os.getpid()
    finally:
        store.unlock()
    assert RunStore(tmp_path / "run").lock_holder() is None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs, so the disk really fills up (needs root: CI runs as root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"CI must be able to mount a tmpfs: {done.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # report.html, result.json: disk full
# A chunk file whose ledger line the full disk refused is left unread, with a warning.
@pytest.mark.filterwarnings("ignore::kit.errors.StoreWarning")
@pytest.mark.parametrize("seed", range(4))
def test_a_disk_filling_at_a_random_point_loses_no_committed_record(
    small_disk: Path, seed: int
) -> None:
    import random

    from tests.workloads import Padded

    out = small_disk / "run"
    filler = small_disk / "filler"
    stats = os.statvfs(small_disk)
    free = stats.f_bavail * stats.f_frsize
    # Leave between nothing and about what the whole run needs, at a random byte.
    filler.write_bytes(b"\0" * (free - random.Random(seed).randrange(0, 200_000)))
    runner = Padded(ToyProvider(toy_config()), output_dir=out, chunk_size=10)
    try:
        first = runner.run(range(300))
        ok_first = first.stats.ok
    except StoreError as exc:
        assert "No space left on device" in str(exc)
        ok_first = None
    filler.unlink()
    again = Padded(ToyProvider(toy_config()), output_dir=out, chunk_size=10).run(range(300))
    assert again.status == "completed" and again.stats.ok == 300, ok_first
    assert again.records == Padded.expected(range(300))
    reads_back(again, out)
    assert kit.attach(out).snapshot().done == 300


@pytest.mark.parametrize("when", ["mid-run", "after the last chunk"])
def test_a_chunks_folder_deleted_under_a_run_fails_it_and_a_rerun_redoes_the_lost_items(
    tmp_path: Path, when: str
) -> None:
    import shutil

    from kit.events import ChunkFinished

    out = tmp_path / "run"

    def pull_the_rug(event: object) -> None:
        last = event.start == 15 if isinstance(event, ChunkFinished) else False
        first = event.start == 0 if isinstance(event, ChunkFinished) else False
        if (when == "mid-run" and first) or (when != "mid-run" and last):
            shutil.rmtree(out / "chunks")

    runner = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5)
    with pytest.raises(StoreError) as info:
        runner.run(range(20), on_event=pull_the_rug)
    assert str(info.value).startswith(
        f"{out / 'chunks'} was deleted, moved or replaced while the run wrote to it, so the "
        "records stored before are gone"
    )
    assert json.loads((out / "result.json").read_text())["status"] == "error"
    with pytest.warns(StoreWarning, match="its items run again on resume"):
        again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(20))
    assert again.records == expected(range(20)) and again.stats.ok == 20


@pytest.mark.parametrize("how", ["deleted", "renamed"])
def test_a_run_dir_that_vanishes_mid_run_ends_the_run(tmp_path: Path, how: str) -> None:
    import shutil

    from kit.events import ChunkFinished

    out = tmp_path / "run"

    def pull_the_rug(event: object) -> None:
        if isinstance(event, ChunkFinished) and event.start == 0:
            if how == "deleted":
                shutil.rmtree(out)
            else:
                out.rename(tmp_path / "elsewhere")

    # Chunks of 100 ms: each is committed on its own, so commits follow the first one.
    runner = Affine(ToyProvider(toy_config(sleep=0.02)), output_dir=out, chunk_size=5)
    with pytest.raises(StoreError) as info:
        runner.run(range(20), on_event=pull_the_rug)
    assert str(info.value).startswith(
        f"the output directory {out} was deleted, moved or replaced while the run wrote to it"
    )
    assert not out.exists(), "a new folder was made in its place"
    if how == "renamed":
        # Moved back, it resumes from the chunk it holds.
        (tmp_path / "elsewhere").rename(out)
        again = Affine(ToyProvider(toy_config(sleep=0.02)), output_dir=out, chunk_size=5).run(
            range(20)
        )
        assert again.records == expected(range(20)) and again.stats.resumed == 5


def test_a_driver_on_its_way_out_counts_as_ended_not_as_another_program(
    bystander: subprocess.Popen[bytes],
) -> None:
    # A driver that just released the run's lock may still be exiting when
    # cancel() looks at it: its command line reads empty, then it is a zombie.
    # That is an ended driver (nothing to signal), not a process to refuse.
    identity = DriverIdentity(
        {
            "pid": bystander.pid,
            "host": socket.gethostname(),
            "created": psutil.Process(bystander.pid).create_time(),
        }
    )
    assert not identity.exiting()
    bystander.kill()
    os.waitid(os.P_PID, bystander.pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
    assert identity.exiting()
    assert not identity.running()
    bystander.wait()
    assert identity.exiting()


def test_a_driver_is_named_in_driver_json_only_once_it_runs_the_driver_program(
    tmp_path: Path,
) -> None:
    # A cancel that reads driver.json at once must find the driver, not a
    # process still inside exec (its command line empty, as an exiting one's):
    # taking it for an ended driver would signal nothing and the run go on.
    out = tmp_path / "run"
    out.mkdir()
    store = RunStore(out)
    store.lock()  # as submit holds it: the driver waits for it to be let go
    try:
        spawn_driver(out, {"never": "loaded"}, total=1)
        driver = json.loads((out / "driver.json").read_text())
        assert DriverIdentity(driver).drives(out)
    finally:
        store.unlock()
    assert signal_driver(out)
    assert psutil.Process(driver["pid"]).wait(timeout=30) is not None
