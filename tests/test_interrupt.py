"""Ctrl-C during run(): pending work cancelled, completed chunks kept, no orphans, resumable."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.workloads import Affine, ToyProvider, expected, outliving, reads_back, toy_config

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    sys.path.insert(0, {root!r})
    import kit
    from tests.workloads import Affine, ToyProvider, toy_config
    parallel = {{"env": "local", "n_workers": 2}}
    session = kit.get_session(parallel)
    pids = sorted(session.client.run(os.getpid).values())
    pids += [p.pid for p in __import__("psutil").Process().children(recursive=True)]
    print(json.dumps(sorted(set(pids))), flush=True)
    runner = Affine(ToyProvider(toy_config(sleep=0.02)), parallel=parallel,
                    output_dir={out!r}, chunk_size=4)
    try:
        runner.run(range(400))
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    """
)


def test_ctrl_c_cancels_keeps_completed_chunks_and_leaves_no_orphans(
    tmp_path: Path, local: dict
) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(root=str(ROOT), out=str(out))],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    children = json.loads(proc.stdout.readline())
    deadline = time.monotonic() + 60
    while len(list((out / "chunks").glob("*.jsonl")) if (out / "chunks").exists() else []) < 5:
        assert time.monotonic() < deadline, "the run never stored 5 chunks"
        time.sleep(0.02)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    line = proc.stdout.readline().split()
    assert line[0] == "interrupted"
    assert float(line[1]) - sent < 5, "control did not come back promptly"
    assert proc.wait(timeout=60) == 0
    assert not outliving(children, 20), "worker processes outlived the driver"

    stored = len(list((out / "chunks").glob("*.jsonl")))
    assert 5 <= stored < 100
    resumed = Affine(
        ToyProvider(toy_config(sleep=0.02)), parallel=local, output_dir=out, chunk_size=4
    ).run(range(400))
    assert resumed.records == expected(range(400))
    assert resumed.stats.resumed >= 4 * stored
    reads_back(resumed, out)
