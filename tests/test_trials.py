"""A trial's status is one enum: what sweep.json holds, what rows and the CLI show."""

from __future__ import annotations

import json

import pytest

import kit
from kit import RunStatus, TrialStatus
from kit._trials import trial_end


def test_a_trial_ends_with_its_runs_final_status_or_pruned() -> None:
    finals = {TrialStatus.of(status) for status in RunStatus if status.final}
    assert finals | {TrialStatus.PRUNED} == {status for status in TrialStatus if status.final}
    assert trial_end(None) is TrialStatus.ERROR
    with pytest.raises(ValueError, match="final status, not 'running'"):
        TrialStatus.of(RunStatus.RUNNING)


def test_sweep_json_holds_the_plain_value_and_reads_back_as_the_member() -> None:
    text = json.dumps({"status": TrialStatus.PENDING})
    assert text == '{"status": "pending"}'
    assert TrialStatus.read(json.loads(text)["status"]) is TrialStatus.PENDING
    # A shared folder's sweep.json Kit did not write is read, not trusted.
    assert TrialStatus.read("half-written") is TrialStatus.ERROR
    assert TrialStatus.read(None) is TrialStatus.ERROR


def test_trial_status_is_public() -> None:
    assert kit.TrialStatus is TrialStatus and "TrialStatus" in kit.__all__
