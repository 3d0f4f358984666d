"""The dashboard's bokeh models, drawn by BokehJS in Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.dashboard import DashboardState
from kit.events import ChunkFinished, RunStarted

pytest.importorskip("bokeh")

# Draws the dashboard as jupyter_bokeh's view does, but into an element not on the
# page (a view a notebook restores and then replaces, a cell not attached yet),
# then puts the element on the page.
DRAW_OFF_THE_PAGE = """
<html><head>{resources}</head><body><script>
window.drawn = (async () => {{
  const target = document.createElement("div");
  const {{Document}} = Bokeh.require("document");
  const {{add_document_standalone}} = Bokeh.require("embed/standalone");
  await add_document_standalone(Document.from_json({item}.doc), target);
  document.body.appendChild(target);
}})();
</script></body></html>
"""


def test_the_dashboard_drawn_off_the_page_shows_its_failures_once_on_it(
    chromium: Any, tmp_path: Path
) -> None:
    from bokeh.embed import json_item
    from bokeh.resources import INLINE

    from kit.dashboard._figures import DashboardView

    state = DashboardState()
    state(RunStarted("r", total=40, resumed=0, workers=1, dashboard=""))
    state(ChunkFinished("r", 0, 20, 0, "a", 0.5, 1.0, 20, 1, 20, ((3, "ValueError: <empty>"),)))
    view = DashboardView("off the page")
    view.update(state.snapshot())
    page_file = tmp_path / "dashboard.html"
    page_file.write_text(
        DRAW_OFF_THE_PAGE.format(resources=INLINE.render(), item=json.dumps(json_item(view.layout)))
    )
    page = chromium.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(page_file.as_uri())
    page.evaluate("() => window.drawn")
    row = page.locator(".kit-failure")
    row.wait_for(timeout=20_000)
    assert row.inner_text().split("\t") == ["3", "ValueError: <empty>"]
    assert errors == []


def test_a_plot_without_a_toolbar_has_no_tool_but_its_hover() -> None:
    # A hidden toolbar's tools still act: a drag would pan a plot away with no
    # reset button to bring it back.
    from bokeh.document import Document
    from bokeh.models import HoverTool, Plot

    from kit.dashboard._figures import DashboardView

    view = DashboardView()
    state = DashboardState()
    state(RunStarted("r", total=4, resumed=0, workers=1))
    state(ChunkFinished("r", 0, 4, 0, "a", 0.5, 1.0, 4, 0, 4, metrics={"wer": (0.4, 4)}))
    view.update(state.snapshot())
    document = Document()
    document.add_root(view.layout)
    plots = [model for model in document.models if isinstance(model, Plot)]
    tools = {plot.name: [type(tool) for tool in plot.toolbar.tools] for plot in plots}
    assert tools == {
        "kit-progress": [],
        "kit-throughput": [],
        "kit-workers": [HoverTool],
        "kit-metric-wer": [HoverTool],  # in the place of the empty metrics plot
    }
    assert view._placeholder.toolbar.tools == []
