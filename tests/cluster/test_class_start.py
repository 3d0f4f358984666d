"""`kit cluster start --class`: one command starts a class's cluster, the teacher's token,
the attendees' line and a warm env; Ctrl-C ends it all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from distributed import Client

from kit.cluster._shared import held_envs
from tests.class_client import ROOT, attendee, reports
from tests.cluster.test_teacher import KIT, kit
from tests.servers import free_port
from tests.workloads import lines


def test_one_command_starts_a_class_that_attendees_use_and_ctrl_c_ends(tmp_path: Path) -> None:
    config = tmp_path / "class.yaml"
    config.write_text(
        "provider: {_target_: tests.workloads.Paced}\n"
        f"factor: 5\nsleep: 0.01\nlog_dir: {tmp_path}\n"
    )
    teacher = tmp_path / "teacher"
    environ = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(teacher))
    port = free_port()
    command = [KIT, "cluster", "start", "--class", "--workers", "2", "--threads", "1"]
    command += ["--port", str(port), "--warm", str(config)]
    started = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        cwd=ROOT,
        start_new_session=True,  # a terminal of its own: Ctrl-C reaches the whole group
    )
    try:
        assert started.stdout is not None
        said = []
        while not said or not said[-1].startswith("Ctrl-C ends the class"):
            line = started.stdout.readline()
            assert line, (said, started.stderr.read() if started.stderr else "")
            said.append(line.rstrip("\n"))
        address = f"tcp://127.0.0.1:{port}"
        assert said[0] == f"class cluster at {address}: 2 workers x 1 threads"
        assert said[1] == f"attendees add: KIT_CLASS_CLUSTER={address}"
        assert any(" is this class's teacher; the token is in " in line for line in said)
        assert any(line.startswith("built kit-env:tests.workloads.Paced:") for line in said)
        assert len(lines(tmp_path, "setup.log")) == 2  # warm: once per worker
        (token,) = (teacher / "kit" / "classes").iterdir()
        assert token.stat().st_mode & 0o777 == 0o600
        # An attendee's run uses the warm env; the teacher cancels nobody by accident.
        job = {"items": 8, "factor": 5, "sleep": 0.01, "log_dir": str(tmp_path)}
        assert [r["ok"] for r in reports(attendee(address, job, user="ann"))] == [8]
        assert len(lines(tmp_path, "setup.log")) == 2
        with Client(address) as watcher:
            assert len(watcher.run_on_scheduler(held_envs)) == 1
        # A second class on the same port is refused, said plainly.
        again = kit("cluster", "start", "--class", "--port", str(port), home=tmp_path / "other")
        assert again.returncode == 2 and f"cannot start the cluster on 127.0.0.1:{port}" in (
            again.stderr
        )
    finally:
        os.killpg(started.pid, signal.SIGINT)  # as Ctrl-C in its terminal: every process
        out, err = started.communicate(timeout=60)
    assert started.returncode == 0, err
    assert "Traceback" not in err  # the workers ignore it; the command closes them in order
    assert out.rstrip().endswith("class ended: scheduler and workers stopped")
    gone = subprocess.run(
        [sys.executable, "-c", f"from distributed import Client; Client('{address}', timeout=2)"],
        capture_output=True,
        text=True,
    )
    assert gone.returncode != 0  # nothing left listening


def test_bad_sizes_and_a_missing_warm_config_are_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    bad = kit("cluster", "start", "--workers", "0")
    assert bad.returncode == 2 and "--workers and --threads take a whole number" in bad.stderr
    missing = kit("cluster", "start", "--class", "--warm", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml: no such config file" in missing.stderr
    # A warm config whose corpus is not there yet: said in one line, and no cluster started.
    decode = tmp_path / "decode.yaml"
    decode.write_text(
        (ROOT / "kit" / "examples" / "asr" / "decode.yaml")
        .read_text()
        .replace("root: runs/asr-data", f"root: {tmp_path / 'no-corpus'}")
    )
    no_corpus = kit("cluster", "start", "--class", "--warm", str(decode))
    assert no_corpus.returncode == 2, no_corpus.stderr
    assert no_corpus.stderr.startswith("kit: error: data.manifest: no such file: ")
    assert "build the corpus with `python -m kit.examples.asr.corpus" in no_corpus.stderr
    assert "Traceback" not in no_corpus.stderr and "class cluster at" not in no_corpus.stdout
