"""The run book's decisions, without Dask: fair shares, seats, cancel requests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.cluster import _shares
from kit.cluster._run_book import RunBook, Seat
from kit.cluster._shares import SEATS_PER_CLIENT, Shares, fair_shares, shares_by_owner


def seat(run_id: str, client: str = "c", max_slots: int | None = None, user: str = "alice") -> Seat:
    return Seat(run_id, client, user, "lab", "Decode", "kit-env:m.P:1", 100, max_slots)


def test_a_run_alone_takes_the_whole_cluster() -> None:
    assert fair_shares(256, {"a": None}) == {"a": 256}


def test_runs_share_equally_and_a_cap_leaves_its_rest_to_the_others() -> None:
    assert fair_shares(8, {"a": None, "b": None}) == {"a": 4, "b": 4}
    assert fair_shares(10, {"a": None, "b": 1, "c": 2}) == {"a": 7, "b": 1, "c": 2}
    assert fair_shares(9, {"a": None, "b": None}) == {"a": 5, "b": 4}


@given(
    st.integers(1, 512),
    st.lists(st.one_of(st.none(), st.integers(1, 64)), min_size=1, max_size=40),
)
def test_shares_never_pass_the_threads_or_a_cap_and_leave_nothing_idle(
    threads: int, caps: list[int | None]
) -> None:
    runs = {f"r{i}": cap for i, cap in enumerate(caps)}
    shares = fair_shares(threads, runs)
    assert all(share >= 1 for share in shares.values())
    assert all(cap is None or shares[run] <= cap for run, cap in runs.items())
    if threads >= len(runs):
        assert sum(shares.values()) <= threads
        # Idle threads only when every run is at its cap.
        if sum(shares.values()) < threads:
            assert all(cap is not None and shares[run] == cap for run, cap in runs.items())
        # Equal: no uncapped run gets more than one thread over another.
        free = [shares[run] for run, cap in runs.items() if cap is None]
        assert not free or max(free) - min(free) <= 1


def test_a_run_joining_halves_the_first_ones_share_and_leaving_gives_it_back() -> None:
    book = RunBook()
    assert book.join(seat("r1"), threads=8, now=0.0) == 8
    assert book.join(seat("r2"), threads=8, now=1.0) == 4
    assert book.share_of("r1", threads=8) == 4
    book.leave("r2", threads=8)
    assert book.share_of("r1", threads=8) == 8


def test_a_listing_shares_the_threads_there_are_now_not_those_at_the_last_report() -> None:
    # Both runs sat while one worker of two threads was up; a second joined since.
    book = RunBook()
    book.join(seat("r1"), threads=2, now=0.0)
    book.join(seat("r2"), threads=2, now=0.0)
    assert [s["share"] for s in book.listing(threads=4)] == [2, 2]


def test_a_client_that_goes_away_leaves_its_runs_seats() -> None:
    book = RunBook()
    book.join(seat("r1", client="alice"), threads=4, now=0.0)
    book.join(seat("r2", client="bob"), threads=4, now=0.0)
    assert book.drop_client("alice", threads=4) == ["r1"]
    assert list(book.seats) == ["r2"] and book.share_of("r2", threads=4) == 4


def test_a_cancel_names_the_run_by_its_first_characters_and_says_which_runs_there_are() -> None:
    book = RunBook()
    book.join(seat("1a2b"), threads=4, now=0.0)
    book.join(seat("1a9c"), threads=4, now=0.0)
    assert book.cancel("1a2", by="teacher@lab").cancel_by == "teacher@lab"
    with pytest.raises(KeyError, match=r"'1a' names 2 runs \(1a2b, 1a9c\): give more of the id"):
        book.cancel("1a", by="teacher")
    with pytest.raises(KeyError, match=r"no run 'ff' on this cluster \(runs now: 1a2b, 1a9c\)"):
        book.cancel("ff", by="teacher")


def test_a_report_from_a_run_without_a_seat_says_so() -> None:
    assert RunBook().report("r9", done=1, failed=0, chunks_out=1, threads=4, now=0.0) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_slots", "abc"),
        ("max_slots", 0),
        ("max_slots", True),
        ("run_id", None),
        ("total", -1),
        ("first_error", "x" * 201),
    ],
)
def test_a_bad_seat_is_refused_before_the_book_stores_it(field: str, value: object) -> None:
    book = RunBook()
    good = seat("r1").as_dict()
    with pytest.raises(TypeError, match=f"a run's seat needs {field} as a"):
        book.join(Seat(**{**good, field: value}), threads=8, now=0.0)
    assert book.seats == {}


def test_a_bad_report_changes_nothing() -> None:
    book = RunBook()
    book.join(seat("r1"), threads=8, now=0.0)
    with pytest.raises(TypeError, match="a run's seat needs done as a whole number of at least 0"):
        book.report("r1", done="many", failed=0, chunks_out=1, threads=8, now=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a run's seat needs first_error as a line of at most 200"):
        book.report("r1", done=1, failed=1, chunks_out=1, threads=8, now=1.0, first_error="a\nb")
    assert (book.seats["r1"].done, book.seats["r1"].seen, book.seats["r1"].first_error) == (
        0,
        0.0,
        "",
    )


def test_one_attendees_many_runs_take_one_attendees_share() -> None:
    # The class trial: one attendee's 50 runs left another's run 1 slot of 8.
    book = RunBook()
    for i in range(50):
        book.join(seat(f"a{i}", client="alice-kernel"), threads=8, now=0.0)
    assert book.join(seat("b", client="bob-kernel", user="bob"), threads=8, now=1.0) == 4
    assert sum(s.share for s in book.seats.values() if s.user == "alice") >= 4


@given(
    st.integers(1, 256),
    st.lists(
        st.tuples(st.sampled_from("abcde"), st.one_of(st.none(), st.integers(1, 16))),
        min_size=1,
        max_size=30,
    ),
)
def test_owners_share_first_and_no_owner_passes_an_equal_split_while_others_want_more(
    threads: int, runs: list[tuple[str, int | None]]
) -> None:
    caps = {f"r{i}": cap for i, (_, cap) in enumerate(runs)}
    owners = {f"r{i}": owner for i, (owner, _) in enumerate(runs)}
    shares = shares_by_owner(threads, caps, owners)
    assert all(share >= 1 for share in shares.values())
    assert all(cap is None or shares[run] <= cap for run, cap in caps.items())
    took: dict[str, int] = {}
    for run, share in shares.items():
        took[owners[run]] = took.get(owners[run], 0) + share
    if threads >= len(caps) * len(took):  # every owner's share covers 1 slot a run
        assert sum(took.values()) <= threads
        equal = threads // len(took)
        uncapped = [o for o in took if any(caps[r] is None for r in caps if owners[r] == o)]
        # An owner who could take more never has less than an equal split, less one.
        assert all(took[o] >= min(equal, threads) - 1 for o in uncapped)


@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from("abc"),
            st.integers(0, 5),
            st.one_of(st.none(), st.integers(1, 4)),
            st.sampled_from([4, 8, 13]),
        ),
        max_size=40,
    )
)
def test_shares_kept_lazily_always_agree_with_sharing_out_afresh(
    steps: list[tuple[bool, str, int, int | None, int]],
) -> None:
    kept, caps, owners = Shares(), {}, {}
    seen: dict[str, int] = {}
    for add, owner, number, cap, threads in steps:
        run = f"{owner}{number}"
        if add and run not in caps:
            kept.add(owner, run, cap)
            caps[run], owners[run] = cap, owner
        elif not add and run in caps:
            kept.remove(owner, run)
            del caps[run], owners[run]
        for name in set(owners.values()):
            seen.update(kept.of(name, threads))
        fresh = shares_by_owner(threads, caps, owners)
        assert {run: seen[run] for run in caps} == fresh


def test_a_client_seats_at_most_its_bound_and_the_next_is_refused_unstored() -> None:
    book = RunBook()
    for i in range(SEATS_PER_CLIENT):
        book.join(seat(f"r{i}", client="greedy"), threads=8, now=0.0)
    with pytest.raises(ValueError, match="the most one client may seat at once"):
        book.join(seat("one-more", client="greedy"), threads=8, now=1.0)
    assert "one-more" not in book.seats and book.per_client["greedy"] == SEATS_PER_CLIENT
    book.leave("r0", threads=8)
    book.join(seat("one-more", client="greedy"), threads=8, now=2.0)  # room again


def test_a_report_shares_out_anew_only_when_seats_or_threads_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 20,000 seats (the forged class's count) took 59 ms a call when each call shared out.
    book = RunBook()
    for i in range(20_000):
        owner = f"c{i // SEATS_PER_CLIENT}"  # each client an attendee, at its bound
        book.join(seat(f"r{i}", client=owner, user=owner), threads=512, now=0.0)
    for i in range(20_000):  # every run has heard its share once
        book.report(f"r{i}", done=0, failed=0, chunks_out=1, threads=512, now=1.0)
    calls = []
    real = _shares.fair_shares
    monkeypatch.setattr(_shares, "fair_shares", lambda *a: calls.append(1) or real(*a))
    for i in range(100):
        book.report(f"r{i}", done=1, failed=0, chunks_out=1, threads=512, now=2.0)
    assert calls == []  # nothing changed: nothing worked out again
    book.leave("r0", threads=512)  # one of c0's runs: c0's split alone changes
    book.report("r1", done=2, failed=0, chunks_out=1, threads=512, now=3.0)
    book.report("r100", done=2, failed=0, chunks_out=1, threads=512, now=3.0)
    assert calls == [1]
