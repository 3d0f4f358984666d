"""The suite's tiers and units: what makes a test `slow`; how pytest-xdist groups and sends them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT
from tests.test_claims import exists

#: Tests that say nothing of their tier, each using one thing that makes a test slow.
UNMARKED_SLOW = [
    # the `chromium` fixture
    "tests/dashboard/test_figures.py::"
    "test_the_dashboard_drawn_off_the_page_shows_its_failures_once_on_it",
    # the `serve` fixture (a Jupyter server)
    "tests/widgets/test_bokehjs.py::test_the_server_serves_the_files_the_loader_asks_for",
    # mlflow_server(...)
    "tests/tracking/test_mlflow.py::"
    "test_a_server_killed_mid_run_holds_the_run_back_seconds_at_most_and_it_is_sent_again",
    # the spoken corpus
    "tests/examples/test_asr.py::test_the_corpus_is_16k_mono_wav_with_a_speaker_per_line",
]

#: Beside them in the same files, tests that use none of it.
UNMARKED_QUICK = [
    "tests/widgets/test_bokehjs.py::"
    "test_with_the_extension_a_widget_cell_shows_a_loader_of_a_few_hundred_bytes",
    "tests/examples/test_asr.py::test_an_unknown_voice_is_named",
]


QUIET = ("-p", "no:randomly", "-p", "no:cacheprovider")


def collected(marks: str, files: list[str]) -> set[str]:
    """The test ids pytest collects from ``files`` under ``-m marks``."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *QUIET, "-m", marks, *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
    return {line.split("[")[0] for line in done.stdout.splitlines() if "::" in line}


def test_a_test_using_a_browser_a_server_or_the_spoken_corpus_is_slow_unmarked() -> None:
    files = sorted({test.partition("::")[0] for test in UNMARKED_SLOW + UNMARKED_QUICK})
    quick = collected("not slow", files)
    assert [test for test in UNMARKED_SLOW if test in quick] == []
    assert [test for test in UNMARKED_QUICK if test not in quick] == []
    # Each was left out under its own name, not a name no longer there (left out as well).
    assert [test for test in UNMARKED_SLOW if not exists(test)] == []


def test_long_tests_go_out_first_then_the_slurms_as_one_unit_then_the_slowest_files() -> None:
    from tests.conftest import scope_of

    flows = "tests/widgets/test_flows_in_browser.py"
    notebook_02 = f"{flows}::test_the_decoding_check_reaches_its_wer_table[lab]"
    slurm_users = [
        f"{flows}::test_the_scale_out_notebook_shows_no_log_noise[lab]",  # asks for `slurm`
        "tests/examples/test_asr.py::test_whisper_decodes_on_slurm_as_inline",
    ]
    quick = "tests/examples/test_asr.py::test_an_unknown_voice_is_named"
    # A test that only names SLURM in its text submits nothing: it stays with its file.
    names_slurm = "tests/widgets/test_panels.py::test_run_panel_shows_the_scale_out_command"
    assert all(exists(test.split("[")[0]) for test in [notebook_02, *slurm_users, names_slurm])
    assert scope_of(notebook_02) == notebook_02
    assert {scope_of(test) for test in slurm_users} == {"slurm"}
    assert scope_of(quick) == "tests/examples/test_asr.py"
    assert scope_of(names_slurm) == "tests/widgets/test_panels.py"
    # The order the units go out in, as the collection sorts them.
    order = units_in_order("tests/examples/test_asr.py", "tests/widgets/test_panels.py", flows)
    assert order[0] == notebook_02, order[:3]
    assert set(order[1 : 1 + len(slurm_users)]) == {"slurm"}, order[:6]
    # Then by expected time, a slow test counting for many quick ones: the hub's two tests
    # (minutes) go out before the store's nineteen (seconds).
    hub, store = "tests/widgets/test_class_on_jupyterhub.py", "tests/test_store.py"
    order = units_in_order(store, hub)
    assert order.count(store) > order.count(hub) and order[0] == hub, order


def units_in_order(*files: str) -> list[str]:
    """The unit of each test of ``files``, in the order the collection sorts them."""
    from tests.conftest import scope_of

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [scope_of(line) for line in done.stdout.splitlines() if "::" in line]


#: A test that starts a process in a session of its own (Ctrl-C in the terminal never
#: reaches it) and a daemon that leaves its parent (as a detached driver does), then waits.
STARTS_AND_WAITS = """
import os, subprocess, sys, time
from pathlib import Path

SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
DAEMON = (
    "import os, subprocess, sys; os.setsid(); "
    "print(subprocess.Popen(sys.argv[1:], stdout=-3, stderr=-3).pid)"  # -3: DEVNULL
)


def test_starts_and_waits():
    alone = subprocess.Popen(SLEEP, start_new_session=True)
    daemon = subprocess.run([sys.executable, "-c", DAEMON, *SLEEP], capture_output=True, text=True)
    pids = [alone.pid, int(daemon.stdout)]
    Path(os.environ["PIDS"]).write_text(" ".join(map(str, pids)))
    time.sleep(600)
"""


@pytest.mark.parametrize("jobs", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_ctrl_c_ends_what_the_suites_tests_started(jobs: list[str], tmp_path: Path) -> None:
    (tmp_path / "test_waits.py").write_text(STARTS_AND_WAITS)
    pids = tmp_path / "pids"
    suite = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", *QUIET, "-p", "tests.reaper", *jobs],
        cwd=tmp_path,
        env={**outside_xdist(), "PIDS": str(pids), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a terminal's Ctrl-C reaches all of it
    )
    try:
        while not pids.exists() or not pids.read_text():
            assert suite.poll() is None, suite.communicate()[0]
            time.sleep(0.05)
        started = [psutil.Process(int(pid)) for pid in pids.read_text().split()]
        os.killpg(suite.pid, signal.SIGINT)
        said, _ = suite.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(suite.pid, signal.SIGKILL)
    _, alive = psutil.wait_procs(started, timeout=10)
    assert alive == [], said
    assert "the suite ended 2 processes it left running: python" in said, said


def outside_xdist() -> dict[str, str]:
    """This process's environment without what makes a pytest think it is an xdist worker."""
    return {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST")}
