"""Every notebook runs top to bottom from a fresh kernel, with its outputs checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kit.widgets.workshop import blanks
from tests.servers import dask_cluster

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: A line of distributed's log ("<time> - distributed.scheduler - INFO - ...").
LOG_LINE = re.compile(r" - distributed(\.\w+)* - [A-Z]+ - ")


def assert_quiet(book: Any) -> None:
    """No cell raised, and no distributed log line landed in any output."""
    for number, cell in enumerate(book.cells):
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", (
                f"cell {number} raised {output.get('ename')}: {output.get('evalue')}"
            )
            if output["output_type"] == "stream":
                noise = [line for line in output["text"].splitlines() if LOG_LINE.search(line)]
                assert not noise, f"cell {number} shows distributed's log: {noise[:3]}"


def text_of(book: Any) -> str:
    parts = []
    for cell in book.cells:
        for output in cell.get("outputs", []):
            parts.append(output.get("text", ""))
            data = output.get("data", {})
            parts.append(data.get("text/plain", ""))
            parts.append(data.get("text/html", ""))
    return "\n".join(parts)


def test_every_notebook_is_tested() -> None:
    # 02 and 03 run in JupyterLab (tests/widgets/test_flows_in_browser.py: the decoding
    # check; the scale-out notebook), their outputs checked there as here: decoding, a
    # SLURM job and a remote scheduler are their cost, so each runs once in the suite.
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == [
        "01_quickstart.ipynb",
        "02_decoding_check.ipynb",
        "03_scale_out.ipynb",
        "04_workshop.ipynb",
        "05_rl_cartpole.ipynb",
    ]


def executed_by_the_manual(site: Path, name: str) -> Any:
    """The notebook as the manual's build ran it (a fresh kernel, in a temporary folder).

    The build (``tests/conftest.py``'s ``site``) runs the quick notebooks anyway, and
    fails on a cell that raises: running them a second time here would only cost.
    """
    book = nbformat.read(site.parent / "jupyter_execute" / "_notebooks" / name, as_version=4)
    assert_quiet(book)
    return book


def test_01_quickstart(site: Path) -> None:
    book = executed_by_the_manual(site, "01_quickstart.ipynb")
    out = text_of(book)
    assert "RunResult(status='completed', items=20, ok=20" in out
    assert "20 ok, 0 failed" in out
    assert "application/vnd.jupyter.widget-view+json" in str(book.cells[5].outputs)  # dashboard


def test_04_workshop_runs_with_the_solutions_switch(site: Path) -> None:
    book = executed_by_the_manual(site, "04_workshop.ipynb")  # built with the switch on
    out = text_of(book)
    assert "'known': 6, 'words': 6" in out  # every word of the first sentence is known
    assert "{'known_share': 0.6666666666666666}" in out  # 8 of 12 words
    assert "[3]" in out and "ZeroDivisionError" in out
    assert out.count("exercise 1 skipped, its solution runs below") == 1
    # Each solution passes its hidden check, which runs it on the workshop's cluster.
    for number in (1, 2, 3, 4):
        assert f"✔ Exercise {number} passes its checks" in out
    assert "runs on: two local workers · stored in: runs/" in out
    dashboard_cell = next(c for c in book.cells if "show_dashboard(handle)" in c.source)
    assert "application/vnd.jupyter.widget-view+json" in str(dashboard_cell.outputs)
    # Exercise 4's sweep: the larger vocabulary knows every word of the three sentences.
    assert "('words=[the,cat,sat,on,mat,a,dog,ran]',) {'known_share': 1.0}" in out


def test_04_workshop_ships_blanks_that_stop_run_all_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KIT_WORKSHOP_SOLUTIONS", raising=False)
    book = nbformat.read(NOTEBOOKS / "04_workshop.ipynb", as_version=4)
    exercises = [c for c in book.cells if c.source.startswith("%%exercise")]
    solutions = [c for c in book.cells if c.source.startswith("%%solution")]
    assert len(exercises) == len(solutions) == 4
    bodies = [c.source.split("\n", 1)[1] for c in exercises]  # below the %%exercise line
    assert all("# your code here" in body and blanks(body) for body in bodies)
    assert all(c.metadata["jupyter"]["source_hidden"] for c in solutions)  # folded
    client = nbclient.NotebookClient(
        book, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with pytest.raises(nbclient.exceptions.CellExecutionError) as info:
        client.execute()
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(info.value))  # without terminal colours
    assert "ExerciseNotDone: Exercise 1 has 3 blanks left" in message
    assert "line 5: return ...  # your code here" in message  # as numbered in the cell
    assert "Traceback" not in message.split("ExerciseNotDone")[-1]


def test_02_runs_on_the_class_cluster_when_one_is_set(
    spoken_corpus: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A class: the decoding check goes to the teacher's cluster, whose workers run in another
    # folder (a relative corpus path would not be theirs), not to a private one per attendee.
    from distributed import Client

    import kit

    home, elsewhere = tmp_path / "alice", tmp_path / "class"
    home.mkdir(), elsewhere.mkdir()
    spoken_corpus(home)
    book = nbformat.read(NOTEBOOKS / "02_decoding_check.ipynb", as_version=4)
    first_run = next(i for i, c in enumerate(book.cells) if "whisper = panel.wait(" in c.source)
    book.cells = book.cells[: first_run + 1]
    book.cells.append(
        nbformat.v4.new_code_cell(
            "print(sorted({s.parallel.env for s in kit.cluster.sessions()}), whisper.stats.ok)"
        )
    )
    with dask_cluster(elsewhere, 2, threads=1) as address:
        monkeypatch.setenv("KIT_CLASS_CLUSTER", address)
        client = nbclient.NotebookClient(
            book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(home)}}
        )
        client.execute()
        assert text_of(book).strip().splitlines()[-1] == "['remote'] 10"
        with Client(address) as teacher:
            envs = kit.cluster.class_runs(teacher)["envs"]
        assert [name for name in envs if ".DecodeProvider:" in name], envs  # built there


def test_05_rl_cartpole(site: Path) -> None:
    book = executed_by_the_manual(site, "05_rl_cartpole.ipynb")
    out = text_of(book)
    assert "'solved': True" in out
    summary_cell = next(c for c in book.cells if "summary = train(" in c.source)
    summary = eval(summary_cell.outputs[-1]["data"]["text/plain"])  # a plain dict literal
    assert summary["best_eval_return"] > 195
    assert "application/vnd.jupyter.widget-view+json" in str(summary_cell.outputs)  # dashboard
    assert "greedy return over 20 episodes" in out


def test_copying_the_notebooks_out_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    from kit import KitError
    from kit.examples._notebooks import copy_notebooks

    victim = tmp_path / "victim.ipynb"
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "01_quickstart.ipynb").symlink_to(victim)  # dangling: exists() says no
    with pytest.raises(KitError, match=r"already holds 01_quickstart\.ipynb: nothing was copied"):
        copy_notebooks(folder)
    assert not victim.exists() and sorted(p.name for p in folder.iterdir()) == [
        "01_quickstart.ipynb"
    ]
    assert len(copy_notebooks(tmp_path / "mine")) == len(list(NOTEBOOKS.glob("*.ipynb")))
