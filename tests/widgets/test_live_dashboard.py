"""The live dashboard widget updates from a background thread while the kernel stays free."""

from __future__ import annotations

import queue
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kernels import start_kernel

pytest.importorskip("jupyter_bokeh")
pytest.importorskip("jupyter_client")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

START = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from IPython.display import display

    from kit import widgets
    from kit.dashboard import Dashboard
    from tests.workloads import Affine, ToyProvider, toy_config

    runner = Affine(ToyProvider(toy_config(sleep=0.03)),
                    parallel={{"env": "local", "n_workers": 2}}, chunk_size=2)
    handle = runner.submit(range(300))
    dash = Dashboard(interval=0.25)
    widget = widgets.dashboard_widget(dash)
    widget.view_wait = 0  # no page renders a view here to say it is there: send at once
    display(widget)
    dash.follow(handle)
    # The cell returns once items are done: the cluster's start, slow on a busy machine,
    # is not part of the seconds in which updates must arrive.
    import time
    deadline = time.monotonic() + 120
    while handle.progress.done == 0 and not handle.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    """
)


def drain(client: Any, seconds: float) -> list[dict]:
    messages = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            messages.append(client.get_iopub_msg(timeout=left))
        except queue.Empty:
            break
    return messages


def test_updates_arrive_at_least_once_a_second_while_the_kernel_is_idle(tmp_path: Path) -> None:
    manager, client = start_kernel(tmp_path)
    try:
        reply = client.execute_interactive(START.format(root=str(ROOT)), timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        # The cell has returned: the kernel is idle, the run and the redraws go on.
        messages = drain(client, 3.0)
        updates = [m for m in messages if m["msg_type"] == "comm_msg"]
        assert len(updates) >= 3, f"{len(updates)} widget updates in 3 s"
        # The kernel answers at once while the dashboard keeps drawing.
        began = time.monotonic()
        reply = client.execute_interactive("answer = 6 * 7", timeout=30)
        assert reply["content"]["status"] == "ok"
        assert time.monotonic() - began < 1.0
        printed: list[str] = []
        final = client.execute_interactive(
            "handle.result(timeout=120); import time; time.sleep(1); "
            "snap = dash.state.snapshot(); print(snap.done, snap.status)",
            timeout=180,
            output_hook=lambda m: printed.append(m["content"].get("text", "")),
        )
        assert final is not None and final["content"]["status"] == "ok"
        assert "".join(printed).split() == ["300", "completed"]
        # The view is drawn on the kernel's thread once it is free: the final picture.
        printed.clear()
        client.execute_interactive(
            "print(dash.view.header.text)",
            timeout=60,
            output_hook=lambda m: printed.append(m["content"].get("text", "")),
        )
        assert "completed" in "".join(printed) and "300/300" in "".join(printed)
        # show_dashboard displays the view and returns nothing a cell would print.
        messages = []
        client.execute_interactive(
            "widgets.show_dashboard(handle)", timeout=60, output_hook=messages.append
        )
        kinds = [m["msg_type"] for m in messages]
        assert "display_data" in kinds and "execute_result" not in kinds, kinds
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_redraws_go_whole_until_a_view_has_spoken_then_as_patches() -> None:
    """A patch is several messages: a view rendered between two of them reads every later
    patch shifted by one and stays on an old picture ("running" under a completed run)."""
    from kit.dashboard import Dashboard
    from kit.events import ChunkFinished, RunFinished, RunStarted
    from kit.widgets._dashboard import DashboardWidget

    dash = Dashboard(interval=0.0)
    widget = DashboardWidget(dash)
    widget.view_wait = 0  # redraws go out before any view is on the page
    sent: list[Any] = []
    widget.send = lambda content, buffers=None: sent.append(content.get("msg"))
    wholes: list[Any] = []
    widget.observe(wholes.append, names="render_bundle")

    dash(RunStarted("r", total=4, resumed=0, workers=1))
    dash(ChunkFinished("r", 0, 2, 0, "0", 0.1, 0.2, 2, 0, 4, metrics={"wer": (0.5, 2)}))
    assert sent == [] and len(wholes) == 2  # each redraw whole, as the widget's state

    widget._sync_model(widget, {"event": "jsevent"}, [])  # a view on the page speaks
    dash(ChunkFinished("r", 2, 2, 0, "0", 0.1, 0.4, 4, 0, 4, metrics={"wer": (0.0, 2)}))
    assert "patch" in sent and len(wholes) == 2  # from now on, patches
    dash(RunFinished("r", "completed", 4, 0, 4, 0.5))
    # ...and the final picture whole too: a view made later starts from the state.
    assert len(wholes) == 3 and "completed" in str(wholes[-1]["new"])
    assert "completed" in widget.dashboard.view.header.text


def test_a_page_asking_for_the_state_gets_the_current_picture_drawn_only_when_stale() -> None:
    """A reloaded page asks every widget's state at once and waits 4 s for the answer,
    then asks each widget alone: a finished dashboard answers with the picture it sent."""
    import json

    from kit.dashboard import Dashboard
    from kit.events import ChunkFinished, RunFinished, RunStarted
    from kit.widgets._dashboard import DashboardWidget

    dash = Dashboard(interval=0.0)
    widget = DashboardWidget(dash)
    widget.view_wait = 0
    widget.send = lambda content, buffers=None: None
    draws = []
    draw = widget._model_to_traits
    widget._model_to_traits = lambda model: draws.append(1) or draw(model)

    dash(RunStarted("r", total=4, resumed=0, workers=1))
    widget._sync_model(widget, {"event": "jsevent"}, [])  # redraws go as patches now
    dash(ChunkFinished("r", 0, 2, 0, "0", 0.1, 0.2, 2, 0, 4, metrics={"wer": (0.5, 2)}))
    drawn = len(draws)
    assert "2/4" in json.dumps(widget.get_state()["render_bundle"])  # stale: drawn anew
    assert len(draws) == drawn + 1

    dash(RunFinished("r", "completed", 4, 0, 4, 0.5))  # the final picture goes whole
    drawn = len(draws)
    for _ in range(3):
        assert "completed" in json.dumps(widget.get_state()["render_bundle"])
    assert len(draws) == drawn  # the state already is the picture


def test_where_the_widget_cannot_be_drawn_it_reads_as_one_line_on_the_run() -> None:
    """A static page (the manual's notebooks) or a console shows the repr, not the document."""
    from kit.dashboard import Dashboard
    from kit.events import ChunkFinished, RunStarted
    from kit.widgets._dashboard import DashboardWidget

    dash = Dashboard(interval=0.0)
    widget = DashboardWidget(dash)
    widget.view_wait = 0  # outside a kernel, redraws go out at once
    dash(RunStarted("r", total=4, resumed=0, workers=1))
    dash(ChunkFinished("r", 0, 3, 1, "0", 0.1, 0.2, 3, 1, 4, metrics={}))
    assert repr(widget) == "<Kit dashboard: running, 3/4 items, 1 failed; live in Jupyter>"
