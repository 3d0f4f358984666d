"""What an output directory may hold and what Kit does with it: data, never code.

Records go to JSON lines or Arrow files and come back as the same types; a
chunk counts only when Kit's ledger names it with its size and digest, so an
edited, truncated or dropped-in file is never trusted; a refused resume
changes nothing; files honour the umask.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kit import Runner
from kit._base.atomic import current_umask
from kit.errors import StoreError, StoreWarning
from kit.events import ChunkFinished
from kit.store import RecordWriter
from kit.store._store import RunStore
from tests.workloads import (
    Affine,
    EmptyEnv,
    Exits,
    ToyProvider,
    Tripwire,
    expected,
    same,
    toy_config,
)


class Mixed(Runner):
    """Records holding every kind of value the data format maps."""

    @staticmethod
    def forward(idx: int) -> dict[Any, Any]:
        return {
            "i": idx,
            "scores": np.arange(6, dtype=np.float32).reshape(2, 3) * idx,
            "best": np.float64(idx) / 3,
            "count": np.int8(idx),
            "raw": bytes([idx, 255]),
            "pair": ("a", idx),
            7: "an int key",
            "__kit__": "a key Kit uses itself",
        }


def test_numpy_bytes_and_tuples_are_stored_as_arrow_and_read_back_as_the_same_types(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    first = Mixed(EmptyEnv({}), output_dir=out, chunk_size=2).run(range(5))
    assert first.stats.failed == 0
    assert {p.suffix for p in (out / "chunks").iterdir()} == {".arrow"}
    again = Mixed(EmptyEnv({}), output_dir=out, chunk_size=2).run(range(5))
    assert again.stats.resumed == 5
    for before, after in zip(first.records, again.records, strict=True):
        assert same(before, after), (before, after)


def chunk_files(out: Path) -> list[Path]:
    return sorted((out / "chunks").iterdir())


def test_an_edited_chunk_is_not_trusted_its_items_run_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    edited = chunk_files(out)[0]
    edited.write_text(edited.read_text().replace('"y": 1', '"y": 999'))
    with pytest.warns(StoreWarning, match=f"chunk file {edited} .*; its items run again"):
        again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    assert again.records == expected(range(10))
    assert again.stats.resumed == 5


def test_a_truncated_chunk_is_run_again_with_a_warning_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    torn = chunk_files(out)[1]
    torn.write_bytes(torn.read_bytes()[:-7])
    with pytest.warns(StoreWarning, match=rf"chunk file {torn} has \d+ bytes where \d+ were"):
        again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    assert again.records == expected(range(10)) and again.stats.resumed == 5


@pytest.mark.parametrize("record_format", ["data", "pickle"])
def test_a_pickle_dropped_into_chunks_is_never_loaded(tmp_path: Path, record_format: str) -> None:
    out, marker = tmp_path / "run", tmp_path / "executed"
    Affine(ToyProvider(toy_config()), output_dir=out, record_format=record_format).run(range(4))
    (out / "chunks" / "0000000004-0000000005.pkl").write_bytes(pickle.dumps(Tripwire(str(marker))))
    with pytest.warns(StoreWarning, match="that Kit's ledger does not name were left alone"):
        again = Affine(ToyProvider(toy_config()), output_dir=out, record_format=record_format).run(
            range(4)
        )
    assert again.stats.resumed == 4
    assert not marker.exists()


def test_an_edited_pickle_chunk_is_not_loaded(tmp_path: Path) -> None:
    out, marker = tmp_path / "run", tmp_path / "executed"
    Affine(ToyProvider(toy_config()), output_dir=out, record_format="pickle").run(range(4))
    chunk = chunk_files(out)[0]
    chunk.write_bytes(pickle.dumps(Tripwire(str(marker))))
    with pytest.warns(StoreWarning, match="differs from what was committed|bytes where"):
        again = Affine(ToyProvider(toy_config()), output_dir=out, record_format="pickle").run(
            range(4)
        )
    assert again.records == expected(range(4)) and not marker.exists()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_a_refused_resume_leaves_the_directory_byte_identical(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config(factor=2)), output_dir=out).run(range(5))
    before = snapshot(out)
    with pytest.raises(StoreError, match="holds a run of a different config"):
        Affine(ToyProvider(toy_config(factor=3)), output_dir=out).run(range(5))
    assert snapshot(out) == before
    assert json.loads((out / "result.json").read_text())["status"] == "completed"


def test_files_honour_the_umask(tmp_path: Path) -> None:
    out = tmp_path / "run"
    old = os.umask(0o027)
    try:
        Affine(ToyProvider(toy_config()), output_dir=out).run(range(3))
    finally:
        os.umask(old)
    for name in ("manifest.json", "config.yaml", "result.json", "ledger.jsonl"):
        assert (out / name).stat().st_mode & 0o777 == 0o640, name
    assert {p.stat().st_mode & 0o777 for p in chunk_files(out)} == {0o640}
    assert current_umask() == old


def test_a_clean_resume_warns_of_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=3).run(range(7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=3).run(range(7))
    assert again.stats.resumed == 7


# --------------------------------------------------------------- detached runs
def detached_dir(tmp_path: Path, driver: dict[str, Any]) -> Path:
    out = tmp_path / "run"
    out.mkdir()
    (out / "driver.json").write_text(json.dumps(driver))
    return out


@pytest.mark.parametrize("pid", [1, 0, -1, "-1", None])
def test_cancel_never_signals_pid_one_or_below(tmp_path: Path, pid: Any) -> None:
    import socket

    from kit import attach

    out = detached_dir(tmp_path, {"pid": pid, "host": socket.gethostname(), "created": 0.0})
    with pytest.raises(StoreError, match="which is not a driver's; nothing was signalled"):
        attach(out).cancel(timeout=1)


def test_cancel_leaves_an_unrelated_process_with_the_recorded_pid_alone(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    from kit import attach

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # Its pid, but not the start time Kit would have recorded for a driver it started.
        out = detached_dir(
            tmp_path, {"pid": bystander.pid, "host": socket.gethostname(), "created": 1.0}
        )
        run = attach(out)
        run.cancel(timeout=1)
        assert bystander.poll() is None, "an unrelated process was signalled"
        assert run.snapshot().describe() == "died"
    finally:
        bystander.kill()
        bystander.wait()


def test_cancel_names_the_host_a_driver_runs_on(tmp_path: Path) -> None:
    from kit import attach

    out = detached_dir(tmp_path, {"pid": 4242, "host": "node-17", "created": 5.0})
    with pytest.raises(StoreError, match="the driver runs on host node-17, not on this one"):
        attach(out).cancel(timeout=1)


@pytest.mark.parametrize("mode", [0o666, 0o620])
def test_a_job_others_may_edit_is_not_run(tmp_path: Path, mode: int) -> None:
    from kit.detached._run import load_job

    marker = tmp_path / "executed"
    job = tmp_path / "job.pkl"
    job.write_bytes(pickle.dumps(Tripwire(str(marker))))
    job.chmod(mode)
    with pytest.raises(StoreError, match="may be changed by other users"):
        load_job(job)
    assert not marker.exists()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_job_another_user_owns_is_not_run(tmp_path: Path) -> None:
    from kit.detached._run import load_job

    marker = tmp_path / "executed"
    job = tmp_path / "job.pkl"
    job.write_bytes(pickle.dumps(Tripwire(str(marker))))
    job.chmod(0o600)
    os.chown(job, 65534, 65534)
    with pytest.raises(StoreError, match="belongs to user id 65534, not to you"):
        load_job(job)
    assert not marker.exists()


def test_a_detached_submit_into_a_directory_a_live_run_writes_changes_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out).run(range(3))
    before = snapshot(out)
    store = RunStore(out)
    store.lock()  # a run in progress, as far as the directory can tell
    try:
        with pytest.raises(StoreError, match="another run is writing to"):
            Affine(ToyProvider(toy_config()), output_dir=out).submit(range(3), detached=True)
    finally:
        store.unlock()
    assert snapshot(out) == before


# --------------------------------------------------------------- forward's failures
@pytest.mark.parametrize("where", ["inline", "local"])
@pytest.mark.parametrize("record_format", ["data", "pickle"])
def test_sys_exit_os_exit_and_an_unpicklable_record_fail_only_their_items(
    tmp_path: Path, request: pytest.FixtureRequest, where: str, record_format: str
) -> None:
    parallel = request.getfixturevalue("local") if where == "local" else None
    result = Exits(
        EmptyEnv({}), parallel=parallel, output_dir=tmp_path / "run", record_format=record_format
    ).run(range(7))
    assert result.records == [0, 1, None, None, 4, None, 6]
    by_index = {e.index: e.message for e in result.errors}
    assert by_index[2] == "forward called sys.exit(3)"
    assert by_index[5] == "forward called os._exit(4)"
    assert by_index[3].startswith("the record['lock'] is a _thread.lock, which ")
    if record_format == "pickle":
        assert "which cannot be pickled (TypeError: cannot pickle" in by_index[3]


# --------------------------------------------------------------- places Kit cannot write
def test_an_output_dir_that_is_a_file_is_a_store_error(tmp_path: Path) -> None:
    taken = tmp_path / "results"
    taken.write_text("not a run")
    with pytest.raises(StoreError, match=f"output_dir {taken} is a file, not a directory"):
        Affine(ToyProvider(toy_config()), output_dir=taken).run(range(2))


class FillsUp(RecordWriter):
    """The disk fills up after two chunks: what ENOSPC looks like to Kit."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def write_chunk(self, stem: Path, chunk: Any) -> Path:
        if self.written == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.written += 1
        return super().write_chunk(stem, chunk)


def test_a_full_disk_keeps_the_stored_chunks_and_a_later_run_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    runner = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=3, writer=FillsUp())
    with pytest.raises(StoreError) as info:
        runner.run(range(12))
    assert str(info.value) == (
        f"cannot store items 6-8 in {out}: No space left on device; the chunks stored before "
        "are kept: free space (or fix the directory) and run again to resume"
    )
    again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=3).run(range(12))
    assert again.records == expected(range(12)) and again.stats.resumed == 6


def test_a_detached_submit_into_a_file_is_a_store_error(tmp_path: Path) -> None:
    taken = tmp_path / "results"
    taken.write_text("not a run")
    with pytest.raises(StoreError, match=f"output_dir {taken} is a file, not a directory"):
        Affine(ToyProvider(toy_config()), output_dir=taken).submit(range(2), detached=True)
    assert taken.read_text() == "not a run"


# --------------------------------------------------------------- crash consistency
#: Each item of the crash test sleeps this long, so a run spans several commits:
#: quicker items all finish within one commit window and the kill would find no
#: commit between them.
ITEM_SECONDS = 0.005


def _run_in_child(out: Path, logs: Path) -> int:
    pid = os.fork()
    if pid == 0:  # the child: a driver that is about to be killed mid-commit
        try:
            reported = logs / "reported.log"

            def note(event: Any) -> None:
                if isinstance(event, ChunkFinished):  # the run says the chunk is done
                    with open(reported, "a") as fh:
                        fh.write(f"{event.start}\n")

            cfg = toy_config(logs, log_calls=True, sleep=ITEM_SECONDS)
            Affine(ToyProvider(cfg), output_dir=out, chunk_size=1).run(range(60), on_event=note)
        finally:
            os._exit(0)
    return pid


def _lines(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


# A kill between a chunk file's rename and its ledger line leaves a file the ledger
# does not name: warned about, never read, its item run again.
@pytest.mark.filterwarnings("ignore::kit.errors.StoreWarning")
def test_a_driver_killed_at_random_points_of_its_commits_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    import random
    import signal
    import time
    from collections import Counter

    from kit._engine.inline import COMMIT_WINDOW

    rng = random.Random(20)
    mid_run = 0
    for trial in range(20):
        out, logs = tmp_path / f"run{trial}", tmp_path / f"logs{trial}"
        logs.mkdir()
        pid = _run_in_child(out, logs)
        deadline = time.monotonic() + 60
        while not _lines(logs / "reported.log") and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(rng.uniform(0.0, 0.1))  # into a later commit, or the items it holds
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        reported = _lines(logs / "reported.log")
        mid_run += len(reported) < 60
        cfg = toy_config(logs, log_calls=True, sleep=ITEM_SECONDS)
        result = Affine(ToyProvider(cfg), output_dir=out, chunk_size=1).run(range(60))
        assert result.records == expected(range(60)), f"trial {trial}"
        calls = Counter(_lines(logs / "calls.log"))
        assert set(calls) == set(range(60)), f"trial {trial}"
        # What the run reported done was stored: the resume never ran it again. Only
        # items after it ran twice: those the kill found held for the next commit
        # (at most one commit window's worth) or in the commit it interrupted.
        again = sorted(i for i, n in calls.items() if n > 1)
        assert not set(again) & set(reported), f"trial {trial}: {again} were reported done"
        if again:
            assert again == list(range(again[0], again[-1] + 1)), f"trial {trial}: {again}"
            assert again[0] > max(reported, default=-1), f"trial {trial}: {again}"
            assert len(again) <= round(COMMIT_WINDOW / ITEM_SECONDS), f"trial {trial}: {again}"
    # The kills fell while the driver had items left (else nothing here was tested).
    assert mid_run >= 10, mid_run


def test_a_detached_submit_a_driver_would_refuse_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config(factor=2)), output_dir=out).run(range(5))
    before = snapshot(out)
    with pytest.raises(StoreError, match="holds a run of a different config"):
        Affine(ToyProvider(toy_config(factor=3)), output_dir=out).submit(range(5), detached=True)
    assert snapshot(out) == before


def test_a_planted_manifest_cannot_make_a_reader_crash_or_read_foreign_positions(
    tmp_path: Path,
) -> None:
    import kit

    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=2).run(range(4))
    manifest = json.loads((out / "manifest.json").read_text())
    # A co-user shrinks the items: the stored chunks now name positions past them.
    (out / "manifest.json").write_text(json.dumps({**manifest, "indices": {"list": [0]}}))
    with pytest.warns(StoreWarning, match="outside the run's 1 items; it was left out"):
        assert list(kit.attach(out)) == []
    with pytest.warns(StoreWarning, match="outside the run's 1 items"):
        assert kit.attach(out).result().records == [None]
    (out / "manifest.json").write_text(json.dumps({**manifest, "indices": "garbage"}))
    for read in (lambda: list(kit.attach(out)), lambda: kit.attach(out).result()):
        with pytest.raises(StoreError, match=r"manifest.json: its indices are not as Kit writes"):
            read()
