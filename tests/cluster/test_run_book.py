"""The run book's decisions, without Dask: fair shares, seats, cancel requests."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kit.cluster import _shares
from kit.cluster._run_book import RunBook, Seat
from kit.cluster._shares import (
    SEATS_PER_CLIENT,
    Shares,
    burst_shares,
    fair_shares,
    shares_by_owner,
    split_runs,
)


def seat(
    run_id: str,
    client: str = "c",
    max_slots: int | None = None,
    user: str = "alice",
    total: int = 100,
) -> Seat:
    return Seat(run_id, client, user, "lab", "Decode", "kit-env:m.P:1", total, max_slots)


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
    assert book.share_of("r1", threads=8, now=1.0) == 4
    book.leave("r2", threads=8)
    assert book.share_of("r1", threads=8, now=1.0) == 8


def test_a_listing_shares_the_threads_there_are_now_not_those_at_the_last_report() -> None:
    # Both runs sat while one worker of two threads was up; a second joined since.
    book = RunBook()
    book.join(seat("r1"), threads=2, now=0.0)
    book.join(seat("r2"), threads=2, now=0.0)
    assert [s["share"] for s in book.listing(threads=4, now=0.0)] == [2, 2]


def test_a_cluster_without_workers_gives_each_run_one_slot_to_wait_with() -> None:
    # Every worker gone (a scale-down, say): runs keep one chunk out, waiting on the scheduler.
    book = RunBook()
    book.join(seat("r1"), threads=0, now=0.0)
    assert book.join(seat("r2", user="bob", total=16), threads=0, now=1.0) == 1
    assert [s["share"] for s in book.listing(threads=0, now=2.0)] == [1, 1]


def test_a_client_that_goes_away_leaves_its_runs_seats() -> None:
    book = RunBook()
    book.join(seat("r1", client="alice"), threads=4, now=0.0)
    book.join(seat("r2", client="bob"), threads=4, now=0.0)
    assert book.drop_client("alice", threads=4) == ["r1"]
    assert list(book.seats) == ["r2"] and book.share_of("r2", threads=4, now=0.0) == 4


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
    book.join(seat("b", client="bob-kernel", user="bob", total=9000), threads=8, now=1.0)
    # Alice's fifty have less left together: her burst first, then half each (not 1 of 51).
    assert book.share_of("b", threads=8, now=1.0) == 1
    assert book.share_of("b", threads=8, now=4.0) == 4
    book.report("b", done=8000, failed=0, chunks_out=4, threads=8, now=4.5)
    book.join(seat("a50", client="alice-kernel"), threads=8, now=5.0)
    assert book.share_of("b", threads=8, now=5.0) == 8  # Bob's 1,000 left is the least: his burst


def caps_and_left(
    names: str, most_cap: int
) -> st.SearchStrategy[dict[str, tuple[int | None, int]]]:
    """Owners (or runs) named from ``names``, each with a cap (or None) and its items left."""
    return st.dictionaries(
        st.sampled_from(names),
        st.tuples(st.one_of(st.none(), st.integers(1, most_cap)), st.integers(0, 400)),
        min_size=1,
    )


@given(st.integers(1, 256), caps_and_left("abcdefgh", 64), st.sets(st.sampled_from("abcdefgh")))
def test_only_the_owner_with_clearly_least_left_passes_its_fair_share_and_only_with_burst_left(
    threads: int, owners: dict[str, tuple[int | None, int]], bursting: set[str]
) -> None:
    caps = {owner: cap for owner, (cap, _) in owners.items()}
    left = {owner: items for owner, (_, items) in owners.items()}
    shares, burster, extra = burst_shares(threads, caps, left, bursting.__contains__)
    usable = {o: min(threads, c or threads, max(1, left[o])) for o, c in caps.items()}
    fair = fair_shares(threads, usable)
    assert all(1 <= shares[o] <= usable[o] for o in owners)  # never more than it can use
    above = [o for o in owners if shares[o] > fair[o]]
    assert above == ([] if burster is None else [burster])
    if burster is None:
        assert shares == fair and extra == 0
    else:
        assert burster in bursting and shares[burster] == usable[burster]
        assert extra == usable[burster] - fair[burster] and len(owners) < threads
        assert all(left[burster] < left[other] for other in owners if other != burster)
        # The others share the rest, one slot each at least.
        others = {o: usable[o] for o in owners if o != burster}
        rest = fair_shares(threads - usable[burster], others)
        assert all(shares[o] == rest[o] for o in others)


@example(share=3, runs={"a": (None, 5), "b": (4, 4)})  # a cap over the share took the cap
@given(st.integers(1, 64), caps_and_left("abcdef", 16))
def test_an_owners_runs_split_its_share_its_shortest_first_each_run_a_slot_at_least(
    share: int, runs: dict[str, tuple[int | None, int]]
) -> None:
    caps = {run: cap for run, (cap, _) in runs.items()}
    left = {run: items for run, (_, items) in runs.items()}
    split = split_runs(share, caps, left)
    assert all(split[run] >= 1 and (caps[run] is None or split[run] <= caps[run]) for run in runs)
    assert all(split[run] <= max(1, share) for run in runs)  # no run past its owner's share
    # Past its share only by the one slot each other run keeps.
    assert sum(split.values()) <= max(share, len(runs)) + len(runs) - 1


def test_a_late_small_run_takes_the_cluster_while_its_burst_lasts() -> None:
    # On an equal half of the slots, the late run took twice its time alone.
    book = RunBook()
    book.join(seat("big", client="alice-kernel", total=3200), threads=8, now=0.0)
    book.report("big", done=640, failed=0, chunks_out=8, threads=8, now=5.0)
    late = seat("late", client="bob-kernel", user="bob", total=16)
    assert book.join(late, threads=8, now=6.0) == 8
    assert book.share_of("big", threads=8, now=6.0) == 1
    # Taking 4 slots beyond its share, 1 s of the cluster lasts 2.5 s (0.1 s a second back).
    assert book.share_of("big", threads=8, now=8.4) == 1
    assert book.share_of("big", threads=8, now=8.6) == 4
    assert book.share_of("late", threads=8, now=8.6) == 4
    book.leave("late", threads=8)
    assert book.share_of("big", threads=8, now=8.7) == 8


def test_a_stream_of_short_runs_takes_a_tenth_of_the_cluster_beyond_its_share_on_average() -> None:
    # Bob starts a 16-item run every 0.2 s for a minute while Alice's large run goes on.
    book, alice, now, step = RunBook(), [], 0.0, 0.05
    book.join(seat("big", client="alice-kernel", total=10**6), threads=8, now=now)
    for number in range(300):
        book.join(seat(f"b{number}", client="bob-kernel", user="bob", total=16), threads=8, now=now)
        for _ in range(4):
            alice.append(book.share_of("big", threads=8, now=now))
            now += step
        book.leave(f"b{number}", threads=8)
    assert alice[:2] == [1, 1]  # the first checks did burst
    # Bob's extra slots over the minute: his second at the start, a tenth of one a second.
    extra = sum(4 - share for share in alice) * step
    assert extra / 8 <= 1.0 + 60 * 0.1 + 0.1


@given(
    st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from("abc"),
            st.integers(0, 5),
            st.one_of(st.none(), st.integers(1, 4)),
            st.sampled_from([4, 8, 13]),
            st.integers(0, 60),
        ),
        max_size=40,
    )
)
def test_shares_kept_lazily_always_agree_with_sharing_out_afresh(
    steps: list[tuple[bool, str, int, int | None, int, int]],
) -> None:
    kept, caps, owners, left = Shares(), {}, {}, {}
    seen: dict[str, int] = {}
    for add, owner, number, cap, threads, items in steps:
        run = f"{owner}{number}"
        if add and run not in caps:
            kept.add(owner, run, cap, items)
            caps[run], owners[run], left[run] = cap, owner, items
        elif not add and run in caps:
            kept.remove(owner, run)
            del caps[run], owners[run], left[run]
        for name in set(owners.values()):
            seen.update(kept.of(name, threads, now=0.0))  # no time passes: every burst is whole
        fresh = shares_by_owner(threads, caps, owners, left, set(owners.values()))
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
    # The last client's 32 runs have the least left: its burst, spent in about a second.
    for i in range(20_000):  # every run has heard its share once
        book.report(f"r{i}", done=0, failed=0, chunks_out=1, threads=512, now=2.0)
    calls = []
    real = _shares.fair_shares
    monkeypatch.setattr(_shares, "fair_shares", lambda *a: calls.append(1) or real(*a))
    for i in range(100):
        book.report(f"r{i}", done=1, failed=0, chunks_out=1, threads=512, now=3.0)
    assert calls == []  # nothing changed: nothing worked out again
    # One of c0's runs leaves: the attendees are shared out once (fewer of them than threads,
    # so work left counts: one entry an attendee, not a seat), then c0's own runs.
    book.leave("r0", threads=512)
    book.report("r1", done=2, failed=0, chunks_out=1, threads=512, now=4.0)
    book.report("r100", done=2, failed=0, chunks_out=1, threads=512, now=4.0)
    assert calls == [1, 1]
