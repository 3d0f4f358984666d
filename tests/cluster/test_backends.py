"""Cluster backends: each ``parallel.env`` is one function named by one registry line.

A package adds a backend without changing Kit: a module with a ``start``
function and an entry point in the group ``kit.backends``. The one here
exists only in the tests, installed as a package is (a ``.dist-info`` on
the path), and runs a real run in a process of its own.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.config import PARALLEL_ENVS, ConfigError, parallel_section
from kit.config._backends import BACKENDS, GROUP

ROOT = Path(__file__).resolve().parents[2]

RUN = """
import json
from tests.workloads import Affine, ToyProvider, expected, toy_config
result = Affine(ToyProvider(toy_config()), parallel={"env": "threads", "n_workers": 2}).run(6)
print(json.dumps({"status": str(result.status), "same": result.records == expected(range(6))}))
"""


def installed_package(folder: Path) -> Path:
    """A package's metadata naming the test backend, as pip would leave it on the path."""
    info = folder / "kit_test_backend-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kit-test-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\nthreads = tests.cluster.thread_backend:start\n"
    )
    return folder


def test_every_built_in_backend_names_a_function_that_starts_it() -> None:
    assert tuple(BACKENDS) == PARALLEL_ENVS
    for env, target in BACKENDS.items():
        if env == "inline":
            assert target == ""  # no cluster: the driver's own process
            continue
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), env


def test_a_backend_a_package_adds_runs_a_run_with_no_change_to_kit(tmp_path: Path) -> None:
    site = installed_package(tmp_path / "site")
    log = tmp_path / "backend.log"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]),
        KIT_TEST_BACKEND_LOG=str(log),
    )
    done = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"status": "completed", "same": True}
    assert log.read_text() == "started threads with 2 workers\n"


def test_a_name_no_backend_has_is_refused_with_the_names_there_are() -> None:
    # This process has no package that adds "threads".
    with pytest.raises(ConfigError) as caught:
        parallel_section({"env": "threads"})
    message = str(caught.value)
    assert "parallel.env" in message and "'threads' is not a valid choice" in message
    assert "one of inline, local, local_gpu, remote" in message
