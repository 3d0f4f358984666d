"""The exporter's thread: what it says, and when, once the run's end stopped waiting for it."""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

from kit.errors import TrackingWarning
from kit.events import RunFinished
from kit.examples.toy import Env, Square
from kit.tracking._again import send_run
from kit.tracking._exporter import Exporter


class Stuck(Exporter):
    """A tracker that takes the run's end and fails once let go (a server gone, say)."""

    tracker = "Stuck"
    finish_wait = 0.2

    def __init__(self) -> None:
        super().__init__()
        self.let_go = threading.Event()

    def close(self, finished: RunFinished, values: dict[str, float]) -> None:
        self.let_go.wait(60)
        raise ConnectionError("the server is gone")


def test_an_exporter_given_up_on_says_so_once_and_never_from_its_thread_later() -> None:
    stuck = Stuck()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = Square(Env({})).run(range(4), on_event=stuck)
        said_at_the_end = [str(w.message) for w in caught if w.category is TrackingWarning]
        stuck.let_go.set()
        assert stuck._thread is not None
        stuck._thread.join(60)
        assert not stuck._thread.is_alive()
        said = [str(w.message) for w in caught if w.category is TrackingWarning]
    assert result.records == [0, 1, 4, 9]
    assert len(said_at_the_end) == 1 and "may miss its end" in said_at_the_end[0]
    # Its failure, minutes on, would come from a thread nobody watches: the run said it all.
    assert said == said_at_the_end
    assert stuck._failed


def test_an_exporter_that_fails_while_the_run_waits_says_why() -> None:
    stuck = Stuck()
    stuck.finish_wait = 60
    stuck.let_go.set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Square(Env({})).run(range(4), on_event=stuck)
    said = [str(w.message) for w in caught if w.category is TrackingWarning]
    assert len(said) == 1 and "Stuck export stopped: ConnectionError: the server is gone" in said[0]


class Slow(Exporter):
    """A tracker slower than its bound at a run's end (a server on a busy machine)."""

    tracker = "Slow"
    finish_wait = 0.01

    def close(self, finished: RunFinished, values: dict[str, float]) -> None:
        time.sleep(0.3)


def test_sending_a_folder_again_waits_for_a_slow_tracker_and_calls_it_sent(
    tmp_path: Path,
) -> None:
    Square(Env({}), output_dir=tmp_path / "run").run(range(4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line, sent = send_run(tmp_path / "run", [Slow()])
    # The run itself gives up after finish_wait; a send again has nothing else to do.
    assert sent, line
    assert "completed, 4 items (0 failed)" in line
    assert not [w for w in caught if w.category is TrackingWarning]
