"""Durable output: the directory format, resume, refusals, writers, a killed driver."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from kit import RunResult, RunStatus, attach
from kit.detached import Lost
from kit.errors import DriverLostError, StoreError
from kit.store import RecordWriter
from tests.workloads import Affine, Opaque, OpaqueRecords, ToyProvider, expected, lines, toy_config

ROOT = Path(__file__).resolve().parents[1]


def calls(log_dir: Path) -> Counter[int]:
    return Counter(int(line) for line in lines(log_dir, "calls.log"))


def test_the_directory_holds_manifest_chunks_errors_config_and_result(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cfg = toy_config(fail_on=[4], note="${factor}")
    result = Affine(ToyProvider(cfg), output_dir=out, chunk_size=3).run(range(10))
    assert result.output_dir == out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_items"] == 10 and manifest["indices"] == {"range": [0, 10, 1]}
    assert manifest["provider"] == "tests.workloads.ToyProvider"
    assert manifest["runner"] == "tests.workloads.Affine"
    assert sorted(p.name for p in (out / "chunks").iterdir()) == [
        "0000000000-0000000003.jsonl",
        "0000000003-0000000006.jsonl",
        "0000000006-0000000009.jsonl",
        "0000000009-0000000010.jsonl",
    ]
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert [e["index"] for e in errors] == [4]
    assert "note: 2" in (out / "config.yaml").read_text()  # resolved
    summary = json.loads((out / "result.json").read_text())
    assert summary["status"] == "completed" and summary["stats"]["failed"] == 1


def test_resume_skips_stored_chunks_and_returns_everything(tmp_path: Path, local: dict) -> None:
    out, logs = tmp_path / "run", tmp_path / "logs"
    logs.mkdir()
    cfg = toy_config(logs, sleep=0.01, log_calls=True)
    handle = Affine(ToyProvider(cfg), parallel=local, output_dir=out, chunk_size=4).submit(
        range(200)
    )
    while handle.progress.done < 40:
        time.sleep(0.01)
    handle.cancel()
    first = handle.result(timeout=30)
    assert first.status == "cancelled"
    stored = {i for i, r in zip(first.indices, first.records, strict=True) if r is not None}
    before = calls(logs)

    second = Affine(ToyProvider(cfg), parallel=local, output_dir=out, chunk_size=4).run(range(200))
    assert second.status == "completed"
    assert second.records == expected(range(200))
    assert second.stats.resumed == len(stored)
    again = calls(logs) - before
    assert not stored & set(again), "forward ran again for stored items"
    assert set(again) | stored == set(range(200))


def test_a_complete_run_is_not_run_again(tmp_path: Path) -> None:
    cfg = toy_config(tmp_path, log_calls=True)
    Affine(ToyProvider(cfg), output_dir=tmp_path / "run").run(range(30))
    again = Affine(ToyProvider(cfg), output_dir=tmp_path / "run").run(range(30))
    assert again.records == expected(range(30))
    assert again.stats.resumed == 30
    assert calls(tmp_path) == Counter(range(30))


def test_a_re_run_with_nothing_left_to_run_keeps_the_stored_result_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config(sleep=0.01)), output_dir=out, chunk_size=5).run(range(20))
    first = json.loads((out / "result.json").read_text())
    assert first["stats"]["workers"] and first["stats"]["wall_seconds"] > 0
    again = Affine(ToyProvider(toy_config(sleep=0.01)), output_dir=out, chunk_size=5).run(range(20))
    assert again.stats.resumed == 20
    # The folder is unchanged, so is what describes it: its workers, its wall time.
    kept = json.loads((out / "result.json").read_text())
    assert kept["stats"] == first["stats"] and kept["summary"] == first["summary"]
    assert kept["status"] == first["status"] == "completed"


def test_a_re_run_gives_back_stored_timings_only_never_a_planted_summary(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    stored = json.loads((out / "result.json").read_text())
    # A co-user who can write the folder plants a summary and counts.
    planted = dict(stored, summary={"mean_y": -1.0}, stats={**stored["stats"], "ok": 99})
    (out / "result.json").write_text(json.dumps(planted))
    again = Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    written = json.loads((out / "result.json").read_text())
    assert written["summary"] == again.summary != {"mean_y": -1.0}
    assert written["stats"]["ok"] == 10 and written["stats"]["resumed"] == 10


def test_a_malformed_stored_result_json_is_not_given_back_by_a_re_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    first = json.loads((out / "result.json").read_text())
    first["stats"]["items"] = "forged"
    (out / "result.json").write_text(json.dumps(first))
    Affine(ToyProvider(toy_config()), output_dir=out, chunk_size=5).run(range(10))
    assert json.loads((out / "result.json").read_text())["stats"]["resumed"] == 10


def test_a_resume_with_another_batch_size_and_a_forward_for_batches_names_batch_size(
    tmp_path: Path,
) -> None:
    def forward_batches(idx: list[int], model: object) -> list[dict]:
        return [Affine.forward(i, model) for i in idx]

    # The same runner, rewritten for batches: its forward changes with its batch_size.
    batched = type("Affine", (Affine,), {"forward": staticmethod(forward_batches)})
    batched.__module__, batched.__qualname__ = Affine.__module__, Affine.__qualname__
    Affine(ToyProvider(toy_config()), output_dir=tmp_path / "run").run(range(8))
    with pytest.raises(StoreError, match=r"holds a run with batch_size=None, not 4; start over"):
        batched(ToyProvider(toy_config()), output_dir=tmp_path / "run", batch_size=4).run(range(8))


def test_another_config_in_the_same_directory_is_refused_with_the_diff(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config(factor=2)), output_dir=out).run(range(5))
    with pytest.raises(StoreError) as info:
        Affine(ToyProvider(toy_config(factor=5)), output_dir=out).run(range(5))
    message = str(info.value)
    assert message.startswith(f"{out} holds a run of a different config (hash ")
    assert ": it differs by factor=5; start over in a new folder (`-o runs/NEW`" in message


def test_other_indices_in_the_same_directory_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out).run(range(5))
    with pytest.raises(StoreError, match=r"holds a run over other items \(5 items there, 6 now"):
        Affine(ToyProvider(toy_config()), output_dir=out).run(range(6))


def test_resume_false_starts_over(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config(factor=2)), output_dir=out).run(range(5))
    result = Affine(ToyProvider(toy_config(factor=3)), output_dir=out, resume=False).run(range(4))
    assert result.records == expected(range(4), factor=3)
    assert result.stats.resumed == 0


def test_a_record_that_is_not_data_fails_as_an_item_naming_its_type(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = OpaqueRecords(ToyProvider(toy_config()), output_dir=out).run(range(3))
    assert result.stats.failed == 3 and result.records == [None] * 3
    assert result.errors[0].message == (
        "the record is a tests.workloads.Opaque, which Kit does not store as data; return "
        "plain values (str, numbers, lists, dicts), numpy arrays or bytes, or set "
        "runner.record_format: pickle"
    )
    assert {p.suffix for p in (out / "chunks").iterdir()} == {".jsonl"}


def test_record_format_pickle_stores_any_record_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    OpaqueRecords(ToyProvider(toy_config()), output_dir=out, record_format="pickle").run(range(4))
    assert {p.suffix for p in (out / "chunks").iterdir()} == {".pkl"}
    again = OpaqueRecords(ToyProvider(toy_config()), output_dir=out, record_format="pickle")
    result = again.run(range(4))
    assert result.records == [Opaque(2 * i) for i in range(4)]
    assert result.stats.resumed == 4
    with pytest.raises(StoreError, match="holds records stored as pickle, and this run stores"):
        OpaqueRecords(ToyProvider(toy_config()), output_dir=out).run(range(4))


class TextWriter(RecordWriter):
    """Writes one combined text file once a run is complete."""

    def merge(self, output_dir: Path, result: RunResult) -> None:
        with open(output_dir / "ys.txt", "w") as fh:
            for record in result.records:
                fh.write(f"{record['y']}\n")


def test_a_custom_writer_merges_a_complete_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out, writer=TextWriter()).run(range(3))
    assert (out / "ys.txt").read_text() == "1\n3\n5\n"


def test_a_directory_in_use_by_another_process_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"fh = open({str(out / '.lock')!r}, 'a+'); fcntl.flock(fh, fcntl.LOCK_EX)\n"
            "fh.write('4242'); fh.flush(); print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        # The pid the kernel names, not the one the holder wrote into the file.
        with pytest.raises(StoreError, match=rf"another run is writing to .* \(pid {holder.pid}\)"):
            Affine(ToyProvider(toy_config()), output_dir=out).run(range(3))
    finally:
        holder.kill()
        holder.wait()


KILLED_DRIVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from tests.workloads import Affine, ToyProvider, toy_config
    cfg = toy_config({logs!r}, sleep=0.01, log_calls=True)
    Affine(ToyProvider(cfg), output_dir={out!r}, chunk_size=5).run(range(300))
    """
)


def test_a_killed_driver_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out, logs = tmp_path / "run", tmp_path / "logs"
    logs.mkdir()
    script = KILLED_DRIVER.format(root=str(ROOT), logs=str(logs), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        chunks = list((out / "chunks").glob("*.jsonl")) if (out / "chunks").exists() else []
        if len(chunks) >= 5:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # A chunk is committed once its ledger line is written (the file comes first).
    committed = len((out / "ledger.jsonl").read_text().splitlines())
    assert 4 <= committed < 60
    status = attach(out).snapshot()
    assert (status.lost, status.done, status.total) == (Lost.INCOMPLETE, 5 * committed, 300)
    assert status.status is RunStatus.ERROR and status.ended
    with pytest.raises(DriverLostError, match=r"ended without finishing .* run again to resume"):
        attach(out).result(timeout=10)

    cfg = toy_config(logs, sleep=0.01, log_calls=True)
    result = Affine(ToyProvider(cfg), output_dir=out, chunk_size=5).run(range(300))
    assert result.records == expected(range(300))
    assert result.stats.resumed == 5 * committed
    counted = calls(logs)
    assert set(counted) == set(range(300))
    # At most the chunk in flight when the driver died ran twice.
    assert sum(n - 1 for n in counted.values()) <= 5


def assert_no_temp_files(out: Path) -> None:
    assert not [p for p in (out / "chunks").iterdir() if p.name.startswith(".")]


def test_no_temporary_files_are_left(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Affine(ToyProvider(toy_config()), output_dir=out).run(range(50))
    assert_no_temp_files(out)


def test_errors_file_lists_each_failure_once_also_after_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cfg = toy_config(fail_on=[1, 5, 8], sleep=0.02)
    handle = Affine(ToyProvider(cfg), output_dir=out, chunk_size=2).submit(range(10))
    while handle.progress.done < 6:
        time.sleep(0.01)
    handle.cancel()
    handle.result(timeout=30)
    during = [json.loads(line)["index"] for line in (out / "errors.jsonl").read_text().splitlines()]
    assert len(during) == len(set(during)) and set(during) <= {1, 5, 8}
    Affine(ToyProvider(cfg), output_dir=out, chunk_size=2).run(range(10))
    final = [json.loads(line)["index"] for line in (out / "errors.jsonl").read_text().splitlines()]
    assert final == [1, 5, 8]


def test_an_output_dir_under_tilde_is_in_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kit

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    Affine(ToyProvider(toy_config()), output_dir="~/runs/x").run(range(3))
    assert (tmp_path / "home" / "runs" / "x" / "manifest.json").is_file()
    assert not (tmp_path / "~").exists()
    assert kit.attach("~/runs/x").result().records == expected(range(3))


def test_a_secret_from_the_environment_is_not_written_to_the_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kit import load_config

    monkeypatch.setenv("KIT_TEST_SECRET", "s3cr3t-t0ken")
    cfg = load_config(
        {"factor": 2, "offset": 1, "token": "${oc.env:KIT_TEST_SECRET}", "auth": "Bearer ${token}"}
    )
    out = tmp_path / "run"
    Affine(ToyProvider(cfg), output_dir=out).run(range(3))
    written = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "config.yaml" in written and "report.html" in written
    assert not [name for name, data in written.items() if b"s3cr3t-t0ken" in data]
    assert "${oc.env:KIT_TEST_SECRET}" in written["config.yaml"].decode()
    # The same config resumes: what is stored still names the same values.
    again = Affine(ToyProvider(cfg), output_dir=out).run(range(3))
    assert again.stats.resumed == 3
