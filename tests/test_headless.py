"""The core imports and works with the notebook stack and the trackers blocked from import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKED = (
    "ipywidgets",
    "bokeh",
    "IPython",
    "jupyter_bokeh",
    "ipykernel",
    "mlflow",
    "tensorboard",
)

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys

    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked for this test: {{name}}")
            return None

    sys.meta_path.insert(0, Block())

    import kit
    from kit.examples.quickstart import quickstart_config

    cfg = kit.load_config({{"a": 1, "b": "${{a}}"}}, ["a=2", "+c=[1]"])
    assert kit.config.resolve_config(cfg).b == 2
    assert kit.config.to_overrides({{"a": 1}}, cfg) == ["a=2", "+b='${{a}}'", "+c=[1]"]
    assert quickstart_config(["parallel.n_workers=1"]).parallel.n_workers == 1

    from kit.rl import EpisodeCollector, gym_env
    from kit.rl.workers import SyncEnvWorker
    from kit.rl.pool import SyncWorkerPool
    pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym_env("CartPole-v1"), 2))
    episodes = EpisodeCollector(pool).collect(2, lambda obs, rngs: [0] * len(obs))
    assert [e.status for e in episodes] == ["terminated", "terminated"]
    # A tracker whose package is missing is named with its extra, before anything runs.
    from kit.tracking import Tracking
    for tracker in ("mlflow", "tensorboard"):
        try:
            Tracking.of({{tracker: True}})
        except ImportError as exc:
            assert f"pip install 'kit-lab[{{tracker}}]'" in str(exc), exc
        else:
            raise AssertionError(f"{{tracker}}: no ImportError")
    # The notebook UI is kit.widgets: the core never imports it.
    leaked = sorted(
        m for m in sys.modules if m.split(".")[0] in BLOCKED or m.startswith("kit.widgets")
    )
    assert not leaked, leaked
    print("ok")
    """
).format(blocked=BLOCKED)


def test_kit_works_without_jupyter_ipywidgets_bokeh_or_trackers() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
