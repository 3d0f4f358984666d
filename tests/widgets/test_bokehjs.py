"""BokehJS served by Kit's Jupyter server extension, and the small loader a widget cell shows."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from typing import Any

import bokeh
import pytest

from kit.widgets.bokehjs import URL_ENV, load_bokehjs, loader_js
from tests.jupyter import Jupyter


def shown(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Collect what ``IPython.display.display`` is given instead of showing it."""
    seen: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **_: seen.append(obj))
    return seen


def test_with_the_extension_a_widget_cell_shows_a_loader_of_a_few_hundred_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(URL_ENV, "/user/ada/kit/bokehjs/")
    seen = shown(monkeypatch)
    load_bokehjs()
    (bundle,) = seen
    assert set(bundle) == {"application/javascript", "application/vnd.bokehjs_load.v0+json"}
    script = bundle["application/javascript"]
    assert len(script) < 2_000
    assert '"/user/ada/kit/bokehjs/static/js/bokeh.min.js"' in script
    assert f'var version = "{bokeh.__version__}"' in script  # loaded once per page


def test_the_server_serves_the_files_the_loader_asks_for(serve: Callable[..., Jupyter]) -> None:
    """Its kernels learn the URL from the server's environment: the browser tests' small
    saved notebooks show they do."""
    jupyter = serve("lab")
    log = jupyter.folder.parent / "lab.log"
    assert "Kit serves BokehJS at /kit/bokehjs/" in log.read_text()
    files = [
        url
        for url in loader_js("/kit/bokehjs/", bokeh.__version__).split('"')
        if url.endswith(".min.js")
    ]
    assert len(files) >= 4
    for url in files:
        with urllib.request.urlopen(f"{jupyter.base}{url}", timeout=30) as answer:
            assert answer.status == 200 and len(answer.read()) > 10_000
