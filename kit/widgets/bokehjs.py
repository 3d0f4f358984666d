"""BokehJS for Kit's widgets: served once by the Jupyter server, not stored in every output.

Kit's dashboards are jupyter_bokeh widgets, which need BokehJS on the page
before they draw. Loaded inline, that is 8 MB of JavaScript in the output of
every cell that shows a dashboard, saved with the notebook (24 MB for
notebook 02). This module is also a Jupyter server extension: enabled, the
server serves bokeh's own files at ``<base_url>kit/bokehjs/`` and tells the
kernels it starts where (``KIT_BOKEHJS_URL``), and a widget cell's output is
then a loader of a few hundred bytes, which fetches BokehJS from the server
when the page has none yet. Without the extension (VS Code, nbclient) the
widgets load BokehJS inline, as before.

Enable it (``make lab`` does, and a wheel install enables it for every
Jupyter server of its environment)::

    jupyter server extension enable kit.widgets.bokehjs

Examples
--------
>>> script = loader_js("/user/ada/kit/bokehjs/", "3.9.2")
>>> "/user/ada/kit/bokehjs/static/js/bokeh.min.js" in script, len(script) < 2000
(True, True)
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["URL_ENV", "load_bokehjs", "loader_js"]

#: Set by the server extension in the server's environment, so its kernels inherit it.
URL_ENV = "KIT_BOKEHJS_URL"
#: Where the extension serves bokeh's static folder, below the server's base URL.
ROUTE = "kit/bokehjs/"

_LOADER = """(function () {
  // Kit: BokehJS from the Jupyter server, once per page (not stored in the notebook).
  var version = %(version)s;
  if (window.Bokeh !== undefined && window.Bokeh.version === version) { return; }
  var files = %(files)s;
  for (var i = 0; i < files.length; i++) {
    // Synchronous on purpose: the widget below this output needs Bokeh as it is drawn.
    var request = new XMLHttpRequest();
    request.open("GET", files[i] + "?v=" + version, false);
    request.send();
    if (request.status !== 200) {
      throw new Error("Kit could not load BokehJS from " + files[i] + " (HTTP " +
                      request.status + "): is the kit.widgets.bokehjs extension enabled?");
    }
    (0, eval)(request.responseText);
  }
})();
"""


def loader_js(url: str, version: str) -> str:
    """Return the JavaScript that loads BokehJS ``version`` from ``url`` unless the page has it."""
    from bokeh.resources import Resources

    files = Resources(mode="server", root_url=url).js_files
    return _LOADER % {"version": json.dumps(version), "files": json.dumps(files)}


def load_bokehjs() -> None:
    """Load BokehJS into the notebook page, for the widgets a cell shows.

    jupyter_bokeh's widget fails with "Cannot read properties of undefined
    (reading 'require')" unless BokehJS was loaded first, by the output of a
    cell: call this while a cell runs (the panels do it when they are built),
    not from a button callback, whose output goes nowhere. From the Jupyter
    server when its extension says where (a small output), else inline (no
    CDN, works offline).
    """
    url = os.environ.get(URL_ENV)
    if not url:
        from bokeh.io import output_notebook
        from bokeh.resources import INLINE

        output_notebook(INLINE, hide_banner=True)
        return
    import bokeh
    from IPython.display import display

    script = loader_js(url, bokeh.__version__)
    # Both kinds, as bokeh's own loader: JupyterLab's jupyter_bokeh renders the
    # second, other front ends run the first.
    bundle = {"application/javascript": script, "application/vnd.bokehjs_load.v0+json": script}
    display(bundle, raw=True)  # type: ignore[no-untyped-call]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "kit.widgets.bokehjs"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Serve bokeh's static files at ``<base_url>kit/bokehjs/static/``; tell the kernels."""
    from bokeh.util.paths import bokehjs_path
    from jupyter_server.utils import url_path_join
    from tornado.web import StaticFileHandler

    web_app = serverapp.web_app
    base = url_path_join(web_app.settings["base_url"], ROUTE)
    pattern = url_path_join(base, "static/(.*)")
    web_app.add_handlers(".*$", [(pattern, StaticFileHandler, {"path": str(bokehjs_path())})])
    # Kernels the server starts inherit its environment: this is how a kernel learns the URL.
    os.environ[URL_ENV] = base
    serverapp.log.info("Kit serves BokehJS at %s", base)
