"""The env ledger's decisions, without Dask: who holds what, and what goes next."""

from __future__ import annotations

import pytest

from kit.cluster._env_ledger import EnvLedger

A, B, C, D = (f"kit-env:m.P:{x}" for x in "abcd")
OTHER = "kit-env:m.Q:a"


def test_an_env_held_by_another_client_never_goes() -> None:
    ledger = EnvLedger()
    ledger.hold(A, "alice-1", "alice", 0.0, present=[], max_envs=2)
    ledger.hold(B, "bob-1", "bob", 1.0, present=[A], max_envs=2)
    # Bob switches engines while both envs are held: over the bound rather than
    # tear down Alice's env under her run.
    assert ledger.hold(C, "bob-2", "bob", 2.0, present=[A, B], max_envs=2) == []
    assert ledger.hold(D, "bob-3", "bob", 3.0, present=[A, B, C], max_envs=2) == []
    assert ledger.holders(A) == ["alice"]


def test_the_least_recently_used_idle_env_goes_whoever_used_it() -> None:
    ledger = EnvLedger()
    ledger.hold(A, "1", "alice", 0.0, present=[], max_envs=2)
    ledger.hold(B, "2", "bob", 1.0, present=[A], max_envs=2)
    ledger.release("2", 2.0)
    ledger.release("1", 3.0)  # A used after B
    assert ledger.hold(C, "3", "carol", 4.0, present=[A, B], max_envs=2) == [B]
    assert ledger.leaving == {B}


def test_envs_of_another_provider_class_do_not_count() -> None:
    ledger = EnvLedger()
    ledger.hold(OTHER, "1", "alice", 0.0, present=[], max_envs=1)
    ledger.release("1", 1.0)
    assert ledger.hold(A, "2", "bob", 2.0, present=[OTHER], max_envs=1) == []


def test_an_env_registered_before_the_ledger_counts_as_the_oldest() -> None:
    ledger = EnvLedger()
    ledger.hold(A, "1", "alice", 5.0, present=[], max_envs=2)
    ledger.release("1", 6.0)
    assert ledger.hold(C, "2", "bob", 7.0, present=[A, B], max_envs=2) == [B]


def test_an_env_being_torn_down_cannot_be_held_until_it_is_gone() -> None:
    ledger = EnvLedger()
    ledger.hold(A, "1", "alice", 0.0, present=[], max_envs=1)
    ledger.release("1", 1.0)
    assert ledger.hold(B, "2", "bob", 2.0, present=[A], max_envs=1) == [A]
    with pytest.raises(ValueError, match="being torn down; hold it once it is gone"):
        ledger.hold(A, "3", "carol", 3.0, present=[A, B], max_envs=1)
    ledger.gone([A])
    assert ledger.hold(A, "3", "carol", 3.0, present=[B], max_envs=2) == []


def test_a_client_that_goes_away_lets_go_of_all_it_held() -> None:
    ledger = EnvLedger()
    ledger.hold(A, "1", "alice", 0.0, present=[], max_envs=3)
    ledger.hold(A, "2", "bob", 0.0, present=[A], max_envs=3)
    ledger.hold(B, "3", "alice", 0.0, present=[A], max_envs=3)
    assert ledger.drop_client("alice", 1.0) == [A, B]
    assert ledger.holders(A) == ["bob"] and ledger.holders(B) == []
    assert ledger.claim(B) and not ledger.claim(A)


def test_an_env_idle_past_its_timeout_expires_and_a_held_one_never() -> None:
    ledger = EnvLedger()
    ledger.hold(A, "1", "alice", 0.0, present=[], max_envs=3, idle_timeout=10.0)
    ledger.hold(B, "2", "bob", 0.0, present=[A], max_envs=3, idle_timeout=10.0)
    ledger.hold(C, "3", "bob", 0.0, present=[A, B], max_envs=3, idle_timeout=None)
    ledger.release("1", 1.0)
    ledger.release("3", 1.0)
    assert ledger.expired(10.5, [A, B, C]) == []  # A idle 9.5 s; B held; C kept for ever
    assert ledger.expired(11.0, [A, B, C]) == [A]
    assert ledger.expired(12.0, [A, B, C]) == []  # claimed once
    ledger.gone([A])
    assert A not in ledger.used and ledger.leaving == set()


def test_releasing_an_unknown_hold_changes_nothing() -> None:
    ledger = EnvLedger()
    assert ledger.release("nobody", 0.0) is None
    assert ledger.holds == {}
