"""Stored outputs of the notebooks the manual's build cannot run, checked against their code.

The decoding check (02) and the scale-out notebook (03) need a spoken corpus,
a recognizer and a running SLURM, which a docs build does not have. Their
outputs are stored in ``docs/stored/`` by ``make notebook-outputs``, with a
hash of the code cells that made them. The build (``docs/conf.py``) puts those
outputs under the shipped notebook's cells, and fails when the code changed
since: a page never shows outputs of code it does not show.

Run it as a script to store them again::

    python docs/stored_outputs.py            # both notebooks
    python docs/stored_outputs.py 03_scale_out.ipynb
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parent / "notebooks"
STORED = HERE / "stored"
#: The notebooks whose outputs are stored rather than made at each build -> what they need.
NEEDS = {
    "02_decoding_check.ipynb": "a spoken corpus and both recognizers",
    "03_scale_out.ipynb": "a spoken corpus, a recognizer and a running SLURM",
}
SLOW = tuple(NEEDS)
#: Outputs a static page cannot show (widget views, BokehJS loading itself), left out
#: of the stored copies: their ``text/plain`` stays.
UNSHOWN = (
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.bokehjs_load.v0+json",
    "application/javascript",
)
HOW_TO_STORE = (
    "run `make notebook-outputs` (it needs the spoken corpus's voices and a running SLURM:"
    " `make system-deps`, then `.ci/slurm-up.sh` as root) and commit docs/stored/"
)


class StaleOutputs(Exception):
    """A notebook's stored outputs are missing or were made by other code."""


def code_hash(cells: list[dict[str, Any]]) -> str:
    """Return the SHA-256 of a notebook's code cells, in order (markdown does not count).

    Examples
    --------
    >>> a = [{"cell_type": "markdown", "source": "# Title"}, {"cell_type": "code", "source": "1"}]
    >>> b = [{"cell_type": "code", "source": ["1"]}]  # on disk, a source may be a list of lines
    >>> code_hash(a) == code_hash(b) != code_hash([{"cell_type": "code", "source": "2"}])
    True
    """
    sources = [_source(c) for c in cells if c["cell_type"] == "code"]
    return hashlib.sha256(json.dumps(sources).encode()).hexdigest()


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def with_stored_outputs(notebook: Path, stored: Path | None = None) -> str:
    """Return ``notebook`` (as JSON text) with the outputs stored for its code.

    Raises
    ------
    StaleOutputs
        No outputs are stored for it, or its code cells changed since they were.
    """
    stored = stored if stored is not None else STORED / notebook.name
    shown = json.loads(notebook.read_text(encoding="utf-8"))
    if not stored.exists():
        raise StaleOutputs(f"{notebook.name}: no outputs are stored in {stored}; {HOW_TO_STORE}")
    book = json.loads(stored.read_text(encoding="utf-8"))
    made = book["metadata"]["kit_stored_outputs"]
    if made["code_sha256"] != code_hash(shown["cells"]):
        raise StaleOutputs(
            f"{notebook.name}: its code changed since its outputs were stored in {stored}"
            f" (on {made['date']}), so the manual would show outputs of other code; {HOW_TO_STORE}"
        )
    ran = iter(c for c in book["cells"] if c["cell_type"] == "code")
    for cell in shown["cells"]:
        if cell["cell_type"] == "code":
            made_by = next(ran)
            cell["outputs"] = made_by["outputs"]
            cell["execution_count"] = made_by["execution_count"]
    # Under the title: when these outputs were made, and that the build checks them.
    shown["cells"].insert(1, _note(made["date"], NEEDS[notebook.name]))
    return json.dumps(shown, indent=1, ensure_ascii=False) + "\n"


def _note(date: str, needs: str) -> dict[str, Any]:
    return {
        "cell_type": "markdown",
        "id": "kit-stored-outputs",
        "metadata": {},
        "source": (
            f":::{{note}}\nThe outputs below were stored from a run on {date} (`make"
            f" notebook-outputs`): this notebook needs {needs}, which the manual's build"
            " does not run. The build checks that they were made by the code shown here.\n:::"
        ),
    }


def store(name: str, folder: Path = STORED) -> Path:
    """Run ``notebooks/<name>`` from a fresh kernel in a temporary folder; store its outputs."""
    import nbclient
    import nbformat

    if name == "03_scale_out.ipynb":
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
        if state.returncode != 0 or not state.stdout.strip():
            raise SystemExit(f"{name} needs a running SLURM (`.ci/slurm-up.sh` as root)")
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    workdir = Path(tempfile.mkdtemp(prefix="kit-notebook-outputs-"))
    # The kernel learns its notebook's name as Jupyter tells it (runs/<user>/<notebook>/).
    before = os.environ.get("JPY_SESSION_NAME")
    os.environ["JPY_SESSION_NAME"] = str(workdir / name)
    try:
        client = nbclient.NotebookClient(
            book, timeout=900, kernel_name="python3", resources={"metadata": {"path": workdir}}
        )
        client.execute()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if before is None:
            os.environ.pop("JPY_SESSION_NAME", None)
        else:
            os.environ["JPY_SESSION_NAME"] = before
    for cell in book.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in map(_shown, cell.outputs) if o is not None]
    book.metadata.pop("widgets", None)  # widget state: only a live kernel can use it
    book.metadata["kit_stored_outputs"] = {
        "code_sha256": code_hash(book.cells),
        "date": datetime.date.today().isoformat(),
    }
    folder.mkdir(exist_ok=True)
    nbformat.write(book, folder / name)
    return folder / name


def _shown(output: Any) -> Any:
    """Return the output without what a static page cannot show; None when nothing is left."""
    if "data" not in output:
        return output
    for mime in UNSHOWN:
        output.data.pop(mime, None)
    return output if output.data else None


def main(argv: list[str]) -> int:
    """Store the outputs of the notebooks named in ``argv`` (default: all of ``SLOW``)."""
    for name in argv or SLOW:
        if name not in SLOW:
            raise SystemExit(f"{name}: not one of the notebooks with stored outputs {SLOW}")
        print(f"notebook-outputs: {store(name).relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
