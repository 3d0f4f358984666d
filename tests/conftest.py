"""Fixtures shared by the tests: one real LocalCluster session for the whole run, SLURM."""

from __future__ import annotations

import ast
import contextlib
import fcntl
import functools
import inspect
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask
import pytest
from hypothesis import settings

import kit
from kit.config import parallel_section

# ...and it writes no run folder into the checkout (tests/checkout.py).
from tests.checkout import pytest_sessionfinish, pytest_sessionstart  # noqa: F401

# Every process the suite starts ends with it, on Ctrl-C too (tests/reaper.py).
from tests.reaper import pytest_configure, pytest_unconfigure  # noqa: F401
from tests.slurm import clear_queue, slurm_problem

if TYPE_CHECKING:
    from tests.jupyter import Jupyter

ROOT = Path(__file__).resolve().parents[1]

LOCAL = {"env": "local", "n_workers": 2}

# The tests' local clusters start their worker processes from multiprocessing's
# forkserver, which imports distributed once, rather than spawning an interpreter that
# imports it again for each (0.7 s of CPU before any task, a few hundred times a
# session); it is distributed's own test suite's setting. Users' clusters keep dask's
# default, spawn: the processes these tests start (`kit run`, kernels, `make demo`, the
# dist tier) do too.
dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})

# Hypothesis fails an example that takes over 200 ms by default: a clock in a test, which
# a busy machine trips (test_plan's once took 318 ms, then 39 ms on the rerun). What the
# properties claim holds whatever each example's time; speed is the benchmarks' business.
settings.register_profile("kit", deadline=None)
settings.load_profile("kit")

#: What makes a test `slow` whether or not it says so, read from what it uses: it drives
#: Chromium, starts a Jupyter server, a hub, an MLflow or TensorBoard server, asks for the
#: SLURM or the built manual, or needs the spoken corpus (made with flite and espeak-ng
#: for the real recognizers). `make check` leaves slow tests out; `make test` runs them.
SLOW_FIXTURES = frozenset({"chromium", "serve", "slurm", "corpus", "spoken_corpus", "site"})
SLOW_USES = re.compile(r"\b(browser|jupyter_server|jupyterhub|mlflow_server|tensorboard_server)\(")


@pytest.fixture
def in_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test (and what it starts) in ``tmp_path``: a run without ``output_dir``
    writes runs/ in the working directory, never the checkout (tests/checkout.py)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if function is None or item.get_closest_marker("slow"):
            continue
        uses = SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if uses or SLOW_USES.search(inspect.getsource(function)):
            item.add_marker(pytest.mark.slow)
    # The order pytest-xdist hands the units out in (see pytest_xdist_make_scheduler): the
    # longest first (`long` tests, the SLURM's, then by expected time), as one packs
    # boxes, so that none starts last and keeps one process busy while the others have
    # nothing left. Stable, so the order pytest-randomly gave each unit's tests stays.
    weights: Counter[str] = Counter()
    for item in items:
        weights[scope_of(item.nodeid)] += SLOW_WEIGHT if item.get_closest_marker("slow") else 1
    rank = {scope: scope_rank(scope, weight) for scope, weight in weights.items()}
    items.sort(key=lambda item: rank[scope_of(item.nodeid)])


#: What a `slow` test counts for against a quick one when the units are ordered: in the
#: idle suite of 2026-11-30 a slow test took 9.6 s on average, a quick one 0.59 s. Counted
#: by number of tests alone, a file of two hub tests (150 s) went out after files of many
#: quick ones and ended last: 835 s against 788 s ordered so (the run's times, replayed).
SLOW_WEIGHT = 16


def scope_rank(scope: str, weight: int) -> tuple[int, int]:
    """Where a unit goes: `long` tests, then the SLURM's, then by ``weight`` (its expected time)."""
    if "::" in scope:
        return (0, 0)
    return (1 if scope == "slurm" else 2, -weight)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Send pytest-xdist's workers a file at a time, the SLURM's tests to one, `long` ones alone.

    A file's tests run on one worker, one after another, so a module's
    fixtures (a Jupyter server, a browser, a cluster) start once. The tests
    that submit to the SLURM (those that ask for the `slurm` fixture) run on
    one worker, one after another, whatever their file: its queue is one for
    the machine, and each such module starts by emptying it. A test marked
    ``long`` (minutes: a shipped notebook run whole) is a unit of its own, so
    two of them never queue behind each other on one worker. The units go
    out in the order pytest_collection_modifyitems gives them.
    """
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False
    return ByFile(config, log)


def scope_of(nodeid: str) -> str:
    """The unit of work pytest-xdist sends ``nodeid`` in: its file, "slurm", or itself."""
    file, _, test = nodeid.partition("::")
    name = test.split("[")[0].split("::")[-1]
    tests = marked_tests(file)
    if name in tests["slurm"]:
        return "slurm"
    return nodeid if name in tests["long"] else file


@functools.cache
def marked_tests(file: str) -> dict[str, frozenset[str]]:
    """The tests in ``file`` (relative to the repo) that use the `slurm` fixture, and the long ones.

    Read from the source: pytest-xdist's controller schedules by test id and
    collects nothing itself.
    """
    path = ROOT / file
    found: dict[str, set[str]] = {"slurm": set(), "long": set()}
    if path.suffix == ".py" and path.is_file():
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                if "slurm" in [arg.arg for arg in node.args.args]:
                    found["slurm"].add(node.name)
                if any(ast.unparse(d) == "pytest.mark.long" for d in node.decorator_list):
                    found["long"].add(node.name)
    return {kind: frozenset(names) for kind, names in found.items()}


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """Return a folder ``build`` filled once for the whole test session.

    Under pytest-xdist each worker is a session of its own: the first to ask
    builds it in the folder the workers share, under a lock, and the others
    wait for it and reuse it (xdist's own advice for session fixtures).
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = factory.mktemp(name)
        build(folder)
        return folder
    shared = factory.getbasetemp().parent
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = shared / f"{name}.built"
        if not built.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            built.touch()
    return folder


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spoken corpus (flite and espeak-ng voices), built once for every module that decodes."""
    from tests.speech import build_shared_corpus

    return built_once(tmp_path_factory, "asr-data", build_shared_corpus)


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
def chromium_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's Chromium, started once a session behind Playwright's browser server."""
    from tests.browser import browser_server

    with browser_server(tmp_path_factory.mktemp("chromium")) as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def chromium_connection(chromium_server: str) -> Iterator[Any]:
    """The session's Chromium, connected to once a module (see ``chromium``).

    Not once a session: while Playwright's sync API is open it marks the
    thread's event loop as running between its calls, so every later
    ``asyncio.run`` in the process (a TLS or remote cluster test) would fail.
    """
    from tests.browser import browser

    with browser(chromium_server) as connected:
        yield connected


@pytest.fixture
def chromium(chromium_connection: Any) -> Iterator[Any]:
    """The session's Chromium: the test opens pages or contexts of its own, closed at its end."""
    yield chromium_connection
    for context in chromium_connection.contexts:
        context.close()


@pytest.fixture(scope="session")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Jupyter]]:
    """``serve(ui, as_make_lab=False)``: the session's server of that kind, started at first ask.

    One JupyterLab and one Notebook 7 (and one set up as ``make lab`` sets it
    up) for every browser test of the session: each test writes notebooks of
    names of its own into the server's folder and shuts its kernels down when
    it is done, so the next finds the server as it was.
    """
    from tests.jupyter import jupyter_server

    with contextlib.ExitStack() as stack:
        started: dict[tuple[str, bool], Jupyter] = {}

        def get(ui: str, *, as_make_lab: bool = False) -> Jupyter:
            key = (ui, as_make_lab)
            if key not in started:
                folder = tmp_path_factory.mktemp(f"{ui}-make-lab" if as_make_lab else ui)
                started[key] = stack.enter_context(
                    jupyter_server(ui, folder, as_make_lab=as_make_lab)
                )
            return started[key]

        yield get


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
    spoken = built_once(tmp_path_factory, "notebook-asr-data", build_corpus)

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

    def build(folder: Path) -> None:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sphinx",
                "-W",
                "-n",
                "-q",
                "-b",
                "html",
                "docs",
                str(folder / "html"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    return built_once(tmp_path_factory, "docs", build) / "html"
