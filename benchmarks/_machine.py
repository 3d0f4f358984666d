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
