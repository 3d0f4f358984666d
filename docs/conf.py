"""Sphinx configuration of Kit's manual: ``make docs`` builds it into ``docs/_build/html``.

The API pages are written at the start of each build from each package's
``__all__`` (into ``docs/_api``, not kept in git), so the reference lists
exactly the public names and cannot drift from the code.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import kit

HERE = Path(__file__).resolve().parent

project = "Kit"
author = "Kit's authors"
copyright = "Kit's authors"
release = kit.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.viewcode",
    "sphinxarg.ext",
]
# Markdown pages and notebooks (myst_nb reads both). The notebooks ship without outputs
# (tests/test_docs.py checks it); the quick ones run at each build, so their outputs are
# those of the code shown, and a cell that fails fails the build. The decoding check and
# the scale-out notebook need a spoken corpus and a SLURM: they show outputs stored by
# `make notebook-outputs`, which the build checks against their code (_notebook_pages).
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
nb_execution_mode = "cache"  # make docs runs a notebook again only when its code changed
nb_execution_excludepatterns = ["*02_decoding_check*", "*03_scale_out*"]
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600
nb_execution_in_temp = True  # what a notebook writes (runs/) lands in a temporary folder
# Widgets need a live kernel: the static page shows their text instead, and loads no
# widget script from a CDN (the site works offline).
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/vnd.bokehjs_load.v0+json", None),
    ("html", "application/javascript", None),  # BokehJS itself, 4 MB a page
]
# An output that is only one of those (BokehJS loading itself) is left out, not a warning.
suppress_warnings = ["mystnb.unknown_mime_type", "mystnb.mime_priority"]
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3  # links to a section of a page: page.md#its-title
exclude_patterns = ["_build", "_generated", "stored", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

html_theme = "pydata_sphinx_theme"
html_title = f"Kit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 4,
}
# The guide's pages stand alone: no left sidebar (the API pages keep theirs).
html_sidebars = {"[!_]*": []}

autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# Every reference to Kit's public names must resolve. Not linked: other
# packages' names (the build is offline: no intersphinx inventories), private
# modules and names, which the manual leaves out, and the collectors' shared base.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!kit\b|kit\.).*"),
    (r"py:.*", r"kit(\.\w+)*\._\w+.*"),
    (r"py:class", r"kit\.rl\.collect\.EnvUser"),
]

#: Package -> title of its API page, in the order of the reference.
PACKAGES = {
    "kit": "kit: configs, providers, runners, sweeps",
    "kit.errors": "kit.errors: every error and warning Kit raises",
    "kit.config": "kit.config: loading, checking and saving configs",
    "kit.task": "kit.task: what a runner declares, as a run reads it",
    "kit.launch": "kit.launch: the run request, assembled in one place",
    "kit.cluster": "kit.cluster: sessions, cluster builders, the env plugin",
    "kit.check": "kit.check: the check before scaling out",
    "kit.store": "kit.store: the run folder",
    "kit.detached": "kit.detached: runs and sweeps that outlive the notebook",
    "kit.tracking": "kit.tracking: MLflow and TensorBoard",
    "kit.dashboard": "kit.dashboard: live dashboards and reports",
    "kit.views": "kit.views: what the terminal and the widgets draw",
    "kit.history": "kit.history: the notebook's run history",
    "kit.asr": "kit.asr: the decoding check",
    "kit.rl": "kit.rl: reinforcement-learning workers",
    "kit.rl.pool": "kit.rl.pool: env pools and their envs' states",
    "kit.rl.shared": "kit.rl.shared: a pool over shared memory",
    "kit.rl.choose": "kit.rl.choose: picking a pool for the machine",
    "kit.rl.workers": "kit.rl.workers: env workers",
    "kit.rl.collect": "kit.rl.collect: seeds, the env loop, collectors",
    "kit.rl.evaluate": "kit.rl.evaluate: evaluators and their results",
    "kit.rl.buffer": "kit.rl.buffer: replay buffers and their batches",
    "kit.rl.battle": "kit.rl.battle: self-play",
    "kit.rl.commander": "kit.rl.commander: schedules",
    "kit.widgets": "kit.widgets: the notebook panels",
}


def _write(page: Path, text: str) -> None:
    if not page.exists() or page.read_text() != text:  # unchanged: nothing to rebuild
        page.write_text(text)


def _api_pages() -> None:
    """One page a package: its ``__all__``, each name once (where it is first exported)."""
    folder = HERE / "_api"
    folder.mkdir(exist_ok=True)
    toc = [".. toctree::", "   :maxdepth: 1", ""]
    seen: set[int] = set()
    listed: set[str] = set()
    for package, title in PACKAGES.items():
        module = importlib.import_module(package)
        names = [n for n in sorted(module.__all__) if id(getattr(module, n)) not in seen]
        seen.update(id(getattr(module, n)) for n in names)
        listed.update(f"{package}.{name}" for name in names)
        lines = [title, "=" * len(title), "", f".. currentmodule:: {package}", ""]
        lines += [".. autosummary::", "   :toctree: generated", ""]
        lines += [f"   {name}" for name in names]
        _write(folder / f"{package}.rst", "\n".join([*lines, ""]))
        toc.append(f"   {package}")
    _write(folder / "index.rst", "\n".join(["API reference", "=============", "", *toc, ""]))
    # A name that moved leaves its old page behind: no page lists it, and Sphinx says so.
    for page in (folder / "generated").glob("*.rst"):
        if page.stem not in listed:
            page.unlink()


def _benchmark_pages() -> None:
    """Write one page of every ``benchmarks/results/*.json`` (as ``make bench`` left them).

    Each result file holds the figures, the machine they were measured on and the
    lines its benchmark wrote from them; ``benchmarks/_machine.py`` makes the page.
    """
    import json

    machine = _load(HERE.parent / "benchmarks" / "_machine.py")
    folder = HERE / "_generated"
    folder.mkdir(exist_ok=True)
    parts = []
    for result in sorted((HERE.parent / "benchmarks" / "results").glob("*.json")):
        results = json.loads(result.read_text(encoding="utf-8"))
        parts.append(machine.report(results, depth=1))
    _write(folder / "benchmarks.md", "\n".join(parts))


def _load(path: Path) -> Any:
    """Import a script of this repository by its path (docs/ and benchmarks/ are no packages)."""
    spec = importlib.util.spec_from_file_location(f"kit_docs_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook_pages() -> None:
    """Copy the notebooks in (Sphinx reads sources under docs/ only); they ship without outputs.

    The two that need a corpus and a SLURM get their stored outputs (``docs/stored/``),
    and the build stops if those were made by other code (``docs/stored_outputs.py``).
    """
    stored = _load(HERE / "stored_outputs.py")
    folder = HERE / "_notebooks"
    folder.mkdir(exist_ok=True)
    for notebook in sorted((HERE.parent / "notebooks").glob("*.ipynb")):
        if notebook.name in stored.SLOW:
            _write(folder / notebook.name, stored.with_stored_outputs(notebook))
        else:
            _write(folder / notebook.name, notebook.read_text(encoding="utf-8"))


def _generate() -> None:
    _api_pages()
    _benchmark_pages()
    _notebook_pages()


def setup(app: Any) -> None:
    """Write the generated pages as the build starts, before Sphinx lists the source files.

    The workshop notebook runs as a teacher's run-through (each exercise skipped, its
    solution run): the kernels the build starts inherit this process's environment.
    Set here, in a build, not when this file is imported: a test that imports it to
    read ``PACKAGES`` must not switch the workshop for the browsers it starts later.
    """
    os.environ["KIT_WORKSHOP_SOLUTIONS"] = "1"
    app.connect("config-inited", lambda _app, _config: _generate())
