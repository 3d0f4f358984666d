"""submit() never blocks: it returns while the cluster is still starting."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import kit
    from tests.workloads import Affine, ToyProvider, toy_config

    if __name__ == "__main__":
        runner = Affine(ToyProvider(toy_config()), parallel={"env": "local", "n_workers": 1})
        # The run's thread registers its session under the registry's lock: held here,
        # the snapshot is of what submit itself did, however the two threads are timed
        # (a cluster started on this thread would still be seen: the lock is reentrant).
        with sys.modules["kit.cluster._session"]._LOCK:
            began = time.perf_counter()
            handle = runner.submit(range(10))
            latency = time.perf_counter() - began
            state = {
                "status": str(handle.status),
                "progress": str(handle.progress),
                "sessions": len(kit.cluster.sessions()),
                "session": handle.session is not None,
                "latency": latency,
            }
        result = handle.result(timeout=120)
        state["final"] = str(result.status)
        state["records"] = len([r for r in result.records if r is not None])
        print(json.dumps(state))
        kit.shutdown()
    """
)


def test_submit_returns_while_the_cluster_is_still_starting(tmp_path: Path) -> None:
    script = tmp_path / "submit.py"
    script.write_text(SCRIPT)
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=Path(__file__).parents[2],
        env={"PYTHONPATH": str(Path(__file__).parents[2])},
        check=True,
    ).stdout
    state = json.loads(out.strip().splitlines()[-1])
    # Asserted on state, not on a clock: nothing was started on the calling thread.
    assert state["status"] == "starting"
    assert state["progress"] == "starting cluster: 0/10 items"
    assert state["sessions"] == 0 and not state["session"]
    assert state["final"] == "completed" and state["records"] == 10
