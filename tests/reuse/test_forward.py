"""The forward sent to the workers in place of a runner's: it pickles, and a hit runs nothing."""

from __future__ import annotations

import pickle
from typing import Any

from omegaconf import OmegaConf

from kit._reuse.forward import ReusingForward
from kit.asr import DecodeRunner
from tests.reuse import workload
from tests.reuse.workload import Decode


def test_the_reusing_forward_of_a_decode_runner_pickles_by_reference_and_works_after() -> None:
    wrapped = ReusingForward(
        DecodeRunner.forward,
        DecodeRunner.finish,
        {"u1": {"ref": "a b", "hyp": "a c", "metrics": {}}},
    )
    again = pickle.loads(pickle.dumps(wrapped))
    plain = OmegaConf.create({"scoring": {"normalizer": "none"}})
    assert again("u1", config=plain)["substitutions"] == 1


def test_a_reused_item_calls_no_forward_and_a_batch_calls_it_once_for_the_rest() -> None:
    cfg = OmegaConf.create(
        {"decoder": {"beam": 3}, "scoring": {"normalizer": "upper", "metric": "wer"}}
    )
    known: dict[Any, Any] = {1: {"id": 1, "hyp": 3}, 2: {"id": 2, "hyp": 6}}
    wrapped = ReusingForward(Decode.forward, Decode.finish, known, verify=0)
    workload.CALLS.clear()
    assert wrapped(1, config=cfg) == {"id": 1, "hyp": 3, "shown": "HYP 3", "wer": 3}
    assert [r["hyp"] for r in wrapped([0, 1, 2, 3], config=cfg)] == [0, 3, 6, 9]
    assert dict(workload.CALLS) == {0: 1, 3: 1}
