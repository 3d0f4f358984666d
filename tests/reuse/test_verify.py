"""A share of reused items runs again: an output forward makes otherwise fails its item, named."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from kit import Runner
from tests.reuse import workload
from tests.reuse.workload import Decode, Numbers


class ReadsTheEnvironment(Runner):
    """Its output depends on an environment variable it does not declare."""

    forward_keys = ("decoder.*",)

    @staticmethod
    def forward(idx: Any, config: Any = None) -> dict[str, Any]:
        return {"hyp": idx * config.decoder.beam + int(os.environ.get("KIT_TEST_SHIFT", "0"))}


def config() -> Any:
    return OmegaConf.create({"decoder": {"beam": 2}})


def test_verify_runs_a_reused_item_again_and_fails_it_naming_the_field_that_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ReadsTheEnvironment(Numbers(config()), output_dir=tmp_path / "a").run(range(4))
    monkeypatch.setenv("KIT_TEST_SHIFT", "1")
    runner = ReadsTheEnvironment(Numbers(config()), output_dir=tmp_path / "b", verify=1.0)
    result = runner.run(range(4))
    assert [e.index for e in result.errors] == [0, 1, 2, 3]
    error = result.errors[1]
    assert error.type == "kit.errors.ReuseMismatchError"
    assert error.message.startswith(
        "item 1: its reused record differs from the one forward makes now in field 'hyp' "
        "(2 reused, 3 now); ReadsTheEnvironment.forward reads something its forward_keys "
        "and the fingerprints do not cover"
    )
    assert result.stats.reused == 0  # a record that failed its check was not reused


def test_verify_runs_about_its_share_of_the_reused_items_again(tmp_path: Path) -> None:
    cfg = OmegaConf.create(
        {"decoder": {"beam": 2}, "scoring": {"normalizer": "plain", "metric": "wer"}}
    )
    Decode(Numbers(cfg), output_dir=tmp_path / "a").run(range(400))
    workload.CALLS.clear()
    result = Decode(Numbers(cfg), output_dir=tmp_path / "b", verify=0.1).run(range(400))
    assert result.stats.reused == 400 and not result.errors
    # 40 expected: binomial(400, 0.1) has a standard deviation of 6.
    assert 10 <= sum(workload.CALLS.values()) <= 80
