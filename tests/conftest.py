"""Fixtures shared by the tests: one real LocalCluster session for the whole run, SLURM."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kit
from kit.config import parallel_section
from tests.slurm import clear_queue, slurm_problem

ROOT = Path(__file__).resolve().parents[1]

LOCAL = {"env": "local", "n_workers": 2}

#: What makes a test `slow` whether or not it says so: it drives Chromium, starts a
#: Jupyter server, or asks for the SLURM. `make check` leaves slow tests out; `make
#: test` runs them all.
SLOW_USES = re.compile(r"\bbrowser\(|\bjupyter_server\(")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if function is None or item.get_closest_marker("slow"):
            continue
        uses_slurm = "slurm" in getattr(item, "fixturenames", ())
        if uses_slurm or SLOW_USES.search(inspect.getsource(function)):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spoken corpus (flite and espeak-ng voices), built once for every module that decodes."""
    from tests.speech import build_shared_corpus

    return build_shared_corpus(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def _close_sessions_at_the_end() -> Iterator[None]:
    yield
    kit.shutdown()


@pytest.fixture(scope="module")
def no_idle_clusters() -> None:
    """Close the clusters earlier tests left running for reuse, before a module of notebook runs.

    Idle, each scheduler and worker process still takes a few percent of a core
    (heartbeats, the event loop); on a busy 2-core machine that share comes out
    of the notebook's own cluster. Two idle 2-worker clusters made notebook 02's
    run in JupyterLab take 1.5x as long under load, past its time limit. Tests
    after the module start the shared cluster again when they need it.
    """
    kit.shutdown()


@pytest.fixture
def local() -> dict[str, Any]:
    """The ``parallel`` section of a 2-process LocalCluster (started once, reused)."""
    return dict(LOCAL)


@pytest.fixture
def local_client(local: dict[str, Any]) -> Any:
    return kit.get_session(local).client


@pytest.fixture(scope="module")
def slurm() -> None:
    """Skip (fail in CI) unless the local SLURM is up; start with no earlier test's jobs."""
    problem = slurm_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"SLURM must run in CI: {problem}")
        pytest.skip(problem)
    clear_queue()


@pytest.fixture
def closing() -> Iterator[list[dict[str, Any]]]:
    """Parallel sections whose sessions the test wants closed at its end."""
    opened: list[dict[str, Any]] = []
    yield opened
    for parallel in opened:
        for session in kit.cluster.sessions():
            if session.parallel == parallel_section(parallel):
                session.close()


@pytest.fixture(scope="session")
def spoken_corpus(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """Notebooks 02 and 03's corpus, spoken once for the whole run (as ``make lab`` does).

    Returns ``place(folder)``, which copies it to ``folder/runs/asr-data``, where
    the notebooks' ``build_corpus("runs/asr-data")`` finds and reuses it. Speaking
    it takes 15-30 s on this machine; its building is tested in tests/examples.
    """
    from kit.examples.asr import build_corpus

    missing = [tool for tool in ("flite", "espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} missing (apt-get install flite espeak-ng sox)")
    spoken = tmp_path_factory.mktemp("asr-data")
    build_corpus(spoken)

    def place(folder: Path) -> Path:
        target = folder / "runs" / "asr-data"
        shutil.copytree(spoken, target, dirs_exist_ok=True)
        return target

    return place


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual, built as ``make docs`` builds it (warnings are errors, nitpicky).

    Once a session: it runs notebooks 01, 04 and 05, whose executed copies
    ``tests/test_notebooks.py`` checks (``site.parent / "jupyter_execute"``).
    """
    pytest.importorskip(
        "sphinx", reason="the manual needs the docs extra: pip install -e '.[docs]'"
    )
    out = tmp_path_factory.mktemp("docs") / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "-n", "-q", "-b", "html", "docs", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out
