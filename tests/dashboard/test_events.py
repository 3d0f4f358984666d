"""The event stream of a known run: the one source every view reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit import Runner
from kit.events import ChunkFinished, Event, RunFinished, RunStarted, read_events
from tests.workloads import EmptyEnv


class Scored(Runner):
    @staticmethod
    def forward(idx: int) -> dict:
        if idx % 10 == 9:
            raise ValueError(f"bad item {idx}")
        return {"idx": idx, "metrics": {"score": idx % 2, "half": 0.5}}

    def summarize(self, records: list) -> dict:
        ok = [r for r in records if r is not None]
        return {"ok_share": len(ok) / len(records)}


@pytest.mark.parametrize("mode", ["inline", "local"])
def test_events_of_a_known_run_add_up(mode: str, tmp_path: Path) -> None:
    parallel = None if mode == "inline" else {"env": "local", "n_workers": 2}
    events: list[Event] = []
    result = Scored(EmptyEnv({}), parallel=parallel, chunk_size=7, output_dir=tmp_path).run(
        range(100), on_event=events.append
    )
    started, *chunks, finished = events
    assert isinstance(started, RunStarted) and started.total == 100 and started.resumed == 0
    assert all(isinstance(c, ChunkFinished) for c in chunks)
    assert isinstance(finished, RunFinished) and finished.status == "completed"
    assert sum(c.items for c in chunks) == 100
    assert sum(c.failed for c in chunks) == 10 == finished.failed
    assert [c.done for c in chunks] == sorted(c.done for c in chunks)
    assert chunks[-1].done == 100 and chunks[-1].failed_total == 10
    per_worker: dict[str, int] = {}
    for c in chunks:
        per_worker[c.worker] = per_worker.get(c.worker, 0) + c.items
    assert per_worker == {name: w.items for name, w in result.stats.workers.items()}
    assert sum(per_worker.values()) == 100
    failures = [f for c in chunks for f in c.failures]
    assert sorted(failures) == [
        (i, f"builtins.ValueError: bad item {i}") for i in range(9, 100, 10)
    ]
    score = sum(c.metrics["score"][0] for c in chunks if "score" in c.metrics)
    count = sum(c.metrics["score"][1] for c in chunks if "score" in c.metrics)
    # Odd indices score 1; the failed ones (9, 19, ... 99) are odd and report nothing.
    assert count == 90 and score == 40
    assert finished.summary == {"ok_share": 0.9}
    # The same stream is stored for other processes (kit report, attach).
    stored = read_events(tmp_path / "events.jsonl")
    assert [type(e).__name__ for e in stored] == [type(e).__name__ for e in events]
    assert stored[1] == events[1]
    if mode == "local":
        # The live view links to the Dask dashboard; the report outlives the cluster: no link.
        assert started.dashboard is not None
        assert "Dask dashboard" not in (tmp_path / "report.html").read_text()


def test_a_resumed_run_says_how_much_was_done(tmp_path: Path) -> None:
    Scored(EmptyEnv({}), output_dir=tmp_path).run(range(20))
    events: list[Event] = []
    Scored(EmptyEnv({}), output_dir=tmp_path).run(range(20), on_event=events.append)
    assert isinstance(events[0], RunStarted) and events[0].resumed == 20
    assert isinstance(events[-1], RunFinished) and events[-1].done == 20


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    Scored(EmptyEnv({}), output_dir=tmp_path).run(range(5))
    log = tmp_path / "events.jsonl"
    log.write_text(log.read_text() + '{"event": "ChunkFin')
    assert isinstance(read_events(log)[-1], RunFinished)


def test_the_dask_dashboard_link_follows_the_link_template(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("bokeh")  # the Dask dashboard needs it
    # distributed adds its defaults to dask's config when first imported. Imported inside
    # the block below (this test first in a process), they were in a "distributed" key
    # that set() had created, and removed on leaving it: every later cluster failed with
    # KeyError: 'distributed'.
    import dask
    import distributed  # noqa: F401

    import kit

    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ada/")
    parallel = {"env": "local", "n_workers": 1, "options": {"name": "link-template"}}
    with dask.config.set(
        {"distributed.dashboard.link": "{JUPYTERHUB_SERVICE_PREFIX}proxy/{port}/status"}
    ):
        session = kit.get_session(parallel)
        try:
            events: list[Event] = []
            Scored(EmptyEnv({}), parallel=parallel).run(range(3), on_event=events.append)
            link = session.dashboard_link
            assert (
                link is not None
                and link.startswith("/user/ada/proxy/")
                and link.endswith("/status")
            )
            assert isinstance(events[0], RunStarted) and events[0].dashboard == link
        finally:
            session.close()
