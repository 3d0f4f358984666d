"""What `import kit` costs, beside the imports a Kit user pays anyway; and the suite's time.

Each import runs in a fresh interpreter, alternated 9 times: `import kit`,
`import omegaconf` (what every config needs), `import distributed` (what a
run on a cluster needs). Each figure is the import's own time, as
``python -X importtime`` counts it (the interpreter's start left out); the
modules it loads, and whether numpy, bokeh or kit.rl are among them. The
test suite's wall time (``make unit`` writes it) stands beside the one
recorded last. Results go to benchmarks/results/import.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import describe, write_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SUITE = ROOT / ".venv" / ".suite-seconds"
IMPORTS = {"kit": "kit", "omegaconf": "omegaconf", "distributed": "distributed"}
ROUNDS = 9
WATCHED = ("numpy", "bokeh", "ipywidgets", "pandas", "distributed", "kit.rl", "kit.asr")


def import_seconds(module: str) -> float:
    """The cumulative import time of ``module`` in a fresh interpreter (-X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    last = [line for line in done.stderr.splitlines() if line.rstrip().endswith(f"| {module}")]
    return int(last[-1].split("|")[1]) / 1e6


def loaded(module: str) -> list[str]:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return list(json.loads(done.stdout))


def main() -> int:
    machine = describe(("dask", "distributed", "omegaconf"))
    runs: dict[str, list[float]] = {name: [] for name in IMPORTS}
    for _ in range(ROUNDS):
        for name, module in IMPORTS.items():
            runs[name].append(import_seconds(module))
    median = {name: statistics.median(times) for name, times in runs.items()}
    spread = {name: (min(times), max(times)) for name, times in runs.items()}
    modules = {name: loaded(module) for name, module in IMPORTS.items()}
    kit_modules = modules["kit"]
    heavy = {name: name in kit_modules for name in WATCHED}
    previous = RESULTS / "import.json"
    last_suite = None
    if previous.is_file():
        last_suite = json.loads(previous.read_text()).get("suite_seconds")
    suite = float(SUITE.read_text()) if SUITE.is_file() else None
    ratio = median["kit"] / median["distributed"]
    lines = [
        "Command: `make bench` (or `python benchmarks/bench_import.py`); each import in a fresh",
        f"interpreter, alternated {ROUNDS} times; medians (min to max).",
        "",
        "| import | time (ms) | modules loaded |",
        "|---|---|---|",
        *(
            f"| `import {IMPORTS[name]}` | {1e3 * median[name]:.0f} "
            f"({1e3 * spread[name][0]:.0f} to {1e3 * spread[name][1]:.0f}) "
            f"| {len(modules[name])} |"
            for name in IMPORTS
        ),
        "",
        f"`import kit` takes {ratio:.2f}x the time of `import distributed`; of "
        f"{', '.join(WATCHED)} it loads "
        f"{', '.join(name for name, there in heavy.items() if there) or 'none'}.",
        "",
        "The test suite (`make unit`, the dist tier left out): "
        + (f"{suite / 60:.1f} min" if suite is not None else "not measured here")
        + (f"; the last recorded: {last_suite / 60:.1f} min." if last_suite else "."),
        "",
    ]
    checks: dict[str, Any] = {
        "import kit loads none of numpy, bokeh, ipywidgets, pandas, distributed, kit.rl, kit.asr": (
            not any(heavy.values())
        ),
        "import kit takes at most half the time of import distributed": ratio <= 0.5,
    }
    write_results(
        RESULTS,
        "import",
        {
            "machine": machine,
            "runs": runs,
            "median": median,
            "modules": {name: len(found) for name, found in modules.items()},
            "loads": heavy,
            "suite_seconds": suite if suite is not None else last_suite,
            "last_suite_seconds": last_suite,
        },
        lines,
        checks,
        title="What import kit costs",
        packages=("dask", "distributed", "omegaconf"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
