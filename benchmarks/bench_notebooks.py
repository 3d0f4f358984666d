"""How long a workshop waits (``make bench``): each notebook run top to bottom from a cold kernel.

For every notebook in ``notebooks/``: the seconds from asking for a fresh
kernel to the last cell done ("run all"), and for notebook 02 the seconds from
asking for the kernel to the WER table (the cell that builds ``wer_table``).
The workshop notebook runs with ``KIT_WORKSHOP_SOLUTIONS=1``, as its teacher
would. Each notebook runs in a fresh folder, so no run history, cluster or
spoken corpus is reused: notebook 02's time includes speaking its corpus
(``make lab`` speaks it before Jupyter starts, so a workshop waits less).

Results are printed and written to benchmarks/results/notebooks.json (the manual's
performance page is made from it).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import nbclient
import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import describe, write_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: What a workshop can bear for the first WER table, from a cold kernel, corpus included.
WER_TABLE_TARGET = 45.0
#: And for any one notebook, run all.
RUN_ALL_TARGET = 120.0


def reply_time(cell: Any) -> float:
    """When the kernel finished the cell (nbclient records it), as a Unix time."""
    stamp = cell.metadata["execution"]["shell.execute_reply"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def run_all(path: Path) -> tuple[float, Any]:
    book = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as folder:
        client = nbclient.NotebookClient(
            book,
            timeout=600,
            kernel_name="python3",
            record_timing=True,
            resources={"metadata": {"path": folder}},
        )
        began = time.time()
        client.execute()
        return began, book


def main() -> int:
    machine = describe(("dask", "distributed", "jupyter_client", "ipykernel"))
    os.environ["KIT_WORKSHOP_SOLUTIONS"] = "1"
    results: dict[str, Any] = {"machine": machine, "run_all_seconds": {}}
    for path in NOTEBOOKS:
        began, book = run_all(path)
        results["run_all_seconds"][path.name] = round(reply_time(book.cells[-1]) - began, 1)
        if path.name.startswith("02"):
            table = next(c for c in book.cells if "wer_table = " in c.source)
            results["cold_kernel_to_wer_table_seconds"] = round(reply_time(table) - began, 1)
        print(f"{path.name}: {results['run_all_seconds'][path.name]} s", flush=True)
    to_table = results["cold_kernel_to_wer_table_seconds"]
    title, packages = (
        "Notebooks: run all from a cold kernel",
        ("dask", "distributed", "jupyter_client", "ipykernel"),
    )
    lines = [
        "",
        "Command: `python benchmarks/bench_notebooks.py` (part of `make bench`).",
        "",
        "| notebook | run all (s) |",
        "|---|---|",
        *[f"| {name} | {s} |" for name, s in results["run_all_seconds"].items()],
        "",
        f"Notebook 02, from asking for a kernel to the WER table, its corpus spoken on the way:"
        f" {to_table} s.",
        "",
    ]
    checks = {
        f"cold kernel to the WER table of notebook 02 <= {WER_TABLE_TARGET:.0f} s": to_table
        <= WER_TABLE_TARGET,
        f"every notebook runs all in <= {RUN_ALL_TARGET:.0f} s": all(
            s <= RUN_ALL_TARGET for s in results["run_all_seconds"].values()
        ),
    }
    write_results(RESULTS, "notebooks", results, lines, checks, title=title, packages=packages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
