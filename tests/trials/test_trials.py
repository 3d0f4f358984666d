"""A trial's state is its run's RunStatus plus what is a trial's own: pending, pruned."""

from __future__ import annotations

from pathlib import Path

import pytest

import kit
from kit import RunStatus, TrialState
from kit._trials.trial import PENDING, PRUNED, SweepResult, Trial


class Ended:
    """What a trial's run handed back, as far as states go."""

    def __init__(self, status: RunStatus) -> None:
        self.status = status


def test_a_trial_ends_with_its_runs_final_status_or_pruned() -> None:
    finals = {TrialState(status) for status in RunStatus if status.final}
    assert all(state.final for state in finals) and TrialState.read(PRUNED).final
    assert not TrialState().final and not TrialState(RunStatus.RUNNING).final
    assert TrialState.ended(None) == TrialState(RunStatus.ERROR)
    with pytest.raises(ValueError, match="final status, not 'running'"):
        TrialState.ended(Ended(RunStatus.RUNNING))  # type: ignore[arg-type]


def test_no_run_state_is_copied_a_trial_adds_only_pending_and_pruned() -> None:
    # RunStatus is the one lifecycle: a trial's words are its run's, and two of its own.
    words = {TrialState(status).word for status in RunStatus}
    assert words == {status.value for status in RunStatus}
    assert (TrialState().word, TrialState.read(PRUNED).word) == (PENDING, PRUNED)
    assert TrialState.read(PRUNED) == TrialState(RunStatus.CANCELLED, pruned=True)


def test_sweep_json_words_read_back_as_states_and_unknown_ones_as_error() -> None:
    for word in [PENDING, PRUNED, *(status.value for status in RunStatus)]:
        assert TrialState.read(word).word == word
    # A shared folder's sweep.json Kit did not write is read, not trusted.
    assert TrialState.read("half-written") == TrialState(RunStatus.ERROR)
    assert TrialState.read(None) == TrialState(RunStatus.ERROR)


def test_a_sweep_result_says_each_trials_state(tmp_path: Path) -> None:
    trials = [Trial(n, (f"x={n}",), tmp_path / f"trial-00{n}") for n in range(3)]
    result = SweepResult(trials, [None, None, None], {1: RuntimeError("no")})
    assert [result.state(t).word for t in trials] == ["pending", "error", "pending"]


def test_trial_state_is_public() -> None:
    assert kit.TrialState is TrialState and "TrialState" in kit.__all__
    assert not hasattr(kit, "TrialStatus")
