"""What invalidates a reused forward output, and what does not: the 8 cases of docs/reuse.md.

Each case runs a module of its own (written here, so its code can be
edited), once, then again into the same results root after one change:
forward's body, a helper of its module, a ``forward_keys`` value, the
model file's bytes, a library's version, one item's data (computed
again), or the normaliser, the metric (reused).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from omegaconf import OmegaConf

ITEMS = 6

MODULE = """
import hashlib
import importlib.metadata
from pathlib import Path

from kit import EnvironmentProvider, Runner


def helper(value):
    return value


class Provider(EnvironmentProvider):
    env_keys = ("data", "model")

    def build_env_local(self):
        return {"data": Path(self.config.data)}

    def make_worker_setup_fn(self):
        data = Path(self.config.data)
        return lambda: {"data": data}

    def reuse_fingerprint(self):
        model = hashlib.sha256(Path(self.config.model.path).read_bytes()).hexdigest()
        library = importlib.metadata.version(self.config.model.library)
        return f"{self.env_name()}|{model}|{library}"

    def item_fingerprints(self, indices):
        data = Path(self.config.data)
        return [hashlib.sha256((data / f"{i}.txt").read_bytes()).hexdigest() for i in indices]


class Decode(Runner):
    forward_keys = ("decoder.*",)

    @staticmethod
    def forward(idx, data, config=None):
        value = int((data / f"{idx}.txt").read_text())
        hyp = helper(value) * config.decoder.beam
        return {"hyp": hyp, **Decode.finish({"hyp": hyp}, config)}

    @staticmethod
    def finish(record, config):
        shown = str(record["hyp"]) if config.scoring.normalizer == "plain" else "-"
        return {"hyp": record["hyp"], "shown": shown, config.scoring.metric: record["hyp"] % 5}
"""


class Case:
    """One results root: a module of its own, its data, its model file and library."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name
        self.source = root / f"{name}.py"
        self.source.write_text(MODULE)
        data = root / "data"
        data.mkdir()
        for i in range(ITEMS):
            (data / f"{i}.txt").write_text(str(i + 1))
        (root / "model.bin").write_bytes(b"weights v1")
        self.site = root / "site"
        self.library(f"{name}_lib", "1.0")
        sys.path[:0] = [str(root), str(self.site)]
        self.module: ModuleType = importlib.import_module(name)
        self.config = OmegaConf.create(
            {
                "data": str(data),
                "model": {"path": str(root / "model.bin"), "library": f"{name}_lib"},
                "decoder": {"beam": 2},
                "scoring": {"normalizer": "plain", "metric": "wer"},
            }
        )
        self.runs = 0

    def library(self, name: str, version: str) -> None:
        """Install (again) a distribution ``name`` of ``version``: its metadata alone."""
        for old in self.site.glob(f"{name}-*.dist-info"):
            (old / "METADATA").unlink()
            old.rmdir()
        info = self.site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        importlib.invalidate_caches()

    def edit(self, old: str, new: str) -> None:
        """Change the module's source and import it again (a notebook's edited cell, run)."""
        text = self.source.read_text()
        assert old in text
        self.source.write_text(text.replace(old, new))
        importlib.invalidate_caches()
        self.module = importlib.reload(self.module)

    def run(self) -> Any:
        self.runs += 1
        provider = self.module.Provider(self.config)
        runner = self.module.Decode(provider, output_dir=self.root / f"run-{self.runs}")
        return runner.run(range(ITEMS))

    def close(self) -> None:
        sys.path[:] = [p for p in sys.path if p not in (str(self.root), str(self.site))]
        sys.modules.pop(self.name, None)


def forward_body(case: Case) -> None:
    case.edit(
        "hyp = helper(value) * config.decoder.beam", "hyp = helper(value + 0) * config.decoder.beam"
    )


def helper_in_module(case: Case) -> None:
    case.edit("    return value\n", "    return value + 0\n")


def forward_keys_value(case: Case) -> None:
    case.config.decoder.beam = 3


def model_bytes(case: Case) -> None:
    (case.root / "model.bin").write_bytes(b"weights v2")


def library_version(case: Case) -> None:
    case.library(f"{case.name}_lib", "1.1")


def item_data(case: Case) -> None:
    (case.root / "data" / "3.txt").write_text("40")


def normalizer(case: Case) -> None:
    case.config.scoring.normalizer = "none"


def metric(case: Case) -> None:
    case.config.scoring.metric = "cer"


#: The change, and the items it leaves reused (all but the changed ones).
MATRIX: list[tuple[Callable[[Case], None], int]] = [
    (forward_body, 0),
    (helper_in_module, 0),
    (forward_keys_value, 0),
    (model_bytes, 0),
    (library_version, 0),
    (item_data, ITEMS - 1),
    (normalizer, ITEMS),
    (metric, ITEMS),
]


@pytest.mark.parametrize(("change", "reused"), MATRIX, ids=[c.__name__ for c, _ in MATRIX])
def test_a_change_reuses_exactly_the_outputs_it_leaves_alike(
    tmp_path: Path, change: Callable[[Case], None], reused: int
) -> None:
    case = Case(tmp_path, f"reuse_case_{change.__name__}")
    try:
        first = case.run()
        assert first.stats.computed == ITEMS and first.stats.reused == 0
        change(case)
        again = case.run()
        fresh = case.module.Decode(case.module.Provider(case.config), reuse=False).run(range(ITEMS))
    finally:
        case.close()
    assert (again.stats.reused, again.stats.computed) == (reused, ITEMS - reused)
    assert again.records == fresh.records  # reused or not, the records are what forward makes
