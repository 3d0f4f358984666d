"""Describe the machine a benchmark ran on, for the results files."""

from __future__ import annotations

import os
import platform
from importlib.metadata import version
from pathlib import Path
from typing import Any


def describe(packages: tuple[str, ...] = ("dask", "distributed")) -> dict[str, Any]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gib = None
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split()[1])
        mem_gib = round(kib / 2**20, 1)
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": mem_gib,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_before": os.getloadavg(),
        **{name: version(name) for name in packages},
    }


def machine_line(machine: dict[str, Any], packages: tuple[str, ...]) -> str:
    """One line describing the machine, for a results page."""
    versions = ", ".join(f"{name} {machine[name]}" for name in packages)
    load = ", ".join(f"{x:.2f}" for x in machine["load_average_before"])
    return (
        f"Machine: {machine['cpus']} CPUs ({machine['cpu']}), {machine['memory_gib']} GiB, "
        f"Python {machine['python']}, {versions}; load average before: {load}."
    )


def report(results: dict[str, Any], depth: int = 0) -> str:
    """Return a benchmark's page (Markdown) from its results: ``make bench``'s JSON alone.

    The title, the machine line (from the machine the figures were measured on),
    the lines the benchmark wrote from its figures, and PASS/MISS per target.
    ``depth`` levels are added to every heading (the manual nests the pages).
    """
    page = results["page"]
    lines = [
        f"# {page['title']}",
        "",
        machine_line(results["machine"], tuple(page["packages"])),
        *page["lines"],
        "## Targets",
        "",
        *[f"- {'PASS' if ok else 'MISS'}: {k}" for k, ok in results["checks"].items()],
        "",
    ]
    return "\n".join("#" * depth + line if line.startswith("#") else line for line in lines)


def write_results(
    folder: Path,
    name: str,
    results: dict[str, Any],
    lines: list[str],
    checks: dict[str, bool],
    *,
    title: str,
    packages: tuple[str, ...],
) -> None:
    """Write NAME.json (the figures, and the page's lines made from them) and print the page.

    ``results["machine"]`` is the machine they were measured on (:func:`describe`);
    ``packages`` the versions its line names. The manual's performance page is
    written from the JSON by :func:`report`.
    """
    import json

    results["checks"] = checks
    results["page"] = {"title": title, "packages": list(packages), "lines": lines}
    print(report(results))
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
