"""kit.compare: the paired bootstrap covers the true difference at about its nominal rate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kit


@dataclass
class Run:
    """The two fields compare reads of a RunResult."""

    indices: list[Any]
    records: list[Any]


def runs(a: np.ndarray, b: np.ndarray) -> tuple[Run, Run]:
    indices = list(range(len(a)))
    return (
        Run(indices, [{"metrics": {"wer": float(v)}} for v in a]),
        Run(indices, [{"metrics": {"wer": float(v)}} for v in b]),
    )


def test_the_95_percent_interval_covers_the_true_difference_about_95_times_in_100() -> None:
    rng = np.random.default_rng(7)
    covered = 0
    repetitions = 200
    for seed in range(repetitions):
        a = rng.normal(0.30, 0.10, size=200)
        b = a + rng.normal(-0.05, 0.05, size=200)  # b is better by 0.05 on average
        found = kit.compare(*runs(a, b), "wer", resamples=1000, seed=seed)
        covered += found.low <= -0.05 <= found.high
    assert 0.92 <= covered / repetitions <= 0.98, covered


def test_identical_runs_give_an_interval_at_zero_and_no_winner() -> None:
    a = np.linspace(0.0, 0.5, 50)
    found = kit.compare(*runs(a, a), "wer")
    assert (found.difference, found.low, found.high, found.p_better) == (0.0, 0.0, 0.0, 0.0)
    assert "difference +0 [+0, +0]" in str(found)


def corpus_wer(records: list[Any]) -> dict[str, Any]:
    errors = sum(r["errors"] for r in records)
    words = sum(r["words"] for r in records)
    return {"wer": errors / words}


@pytest.mark.filterwarnings("ignore:only .* completed item")
def test_a_corpus_metric_is_resampled_through_the_runners_summarize() -> None:
    # Short utterances with many errors weigh little in corpus WER: not a mean of ratios.
    a = Run(
        [0, 1, 2, 3] * 1, [{"errors": e, "words": w} for e, w in [(1, 2), (0, 20), (1, 20), (2, 2)]]
    )
    b = Run(
        [0, 1, 2, 3], [{"errors": e, "words": w} for e, w in [(0, 2), (0, 20), (1, 20), (1, 2)]]
    )
    found = kit.compare(a, b, "wer", summarize=corpus_wer, resamples=500)
    assert found.a == pytest.approx(4 / 44) and found.b == pytest.approx(2 / 44)
    assert found.difference == pytest.approx(-2 / 44)
    assert found.low <= found.difference <= found.high <= 0
    assert found.items == 4


@pytest.mark.filterwarnings("ignore:only .* completed item")
def test_items_pair_by_index_and_failed_ones_drop_out() -> None:
    a = Run([3, 1, 2], [{"metrics": {"wer": 0.5}}, {"metrics": {"wer": 0.2}}, None])
    b = Run(
        [1, 2, 3], [{"metrics": {"wer": 0.1}}, {"metrics": {"wer": 0.0}}, {"metrics": {"wer": 0.5}}]
    )
    found = kit.compare(a, b, "wer")
    assert found.items == 2 and found.difference == pytest.approx(-0.05)


@pytest.mark.filterwarnings("ignore:only .* completed item")
def test_runs_without_common_items_or_the_metric_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no completed item in common"):
        kit.compare(Run([0], [{"metrics": {"wer": 1}}]), Run([1], [{"metrics": {"wer": 1}}]), "wer")
    with pytest.raises(
        ValueError, match=r"run a's record at paired position 0 has no number metrics\['cer'\]"
    ):
        kit.compare(*runs(np.zeros(3), np.zeros(3)), "cer")
    with pytest.raises(ValueError, match="summarize\\(\\) gave no number 'cer'"):
        kit.compare(
            Run([0], [{"errors": 0, "words": 1}]),
            Run([0], [{"errors": 0, "words": 1}]),
            "cer",
            summarize=corpus_wer,
        )


def test_a_metric_that_is_not_finite_is_refused_naming_the_item() -> None:
    a, b = runs(np.linspace(0.1, 0.6, 6), np.array([0.1, 0.2, np.inf, 0.4, 0.5, 0.6]))
    with pytest.raises(ValueError, match=r"run b's record at paired position 2 has .* = inf"):
        kit.compare(a, b, "wer")


def test_one_common_item_says_the_interval_means_little() -> None:
    with pytest.warns(RuntimeWarning, match="only 1 completed item"):
        kit.compare(*runs(np.array([0.1]), np.array([0.2])), "wer")


def test_what_is_not_a_run_is_named_and_a_runs_folder_is_read(tmp_path: Path) -> None:
    from tests.workloads import Scored, ToyProvider, toy_config

    a = Scored(ToyProvider(toy_config()), output_dir=tmp_path / "a").run(range(8))
    with pytest.raises(TypeError, match=r"b is NoneType, not a run: give a kit\.RunResult"):
        kit.compare(a, None, "wer")  # type: ignore[arg-type]
    found = kit.compare(tmp_path / "a", a, "wer")
    assert found.difference == 0 and found.items == 8


def test_a_large_comparison_draws_its_resamples_in_blocks() -> None:
    # 200,000 paired items x 2,000 resamples: 400 million draws, never held at once.
    rng = np.random.default_rng(3)
    a = rng.normal(0.3, 0.1, size=200_000)
    found = kit.compare(*runs(a, a + rng.normal(-0.01, 0.05, size=a.size)), "wer")
    assert found.difference == pytest.approx(-0.01, abs=0.001)
    assert found.low < found.difference < found.high and found.high - found.low < 0.002


def test_an_interval_is_printed_with_one_number_of_decimals() -> None:
    a = np.linspace(0.0, 0.5, 50)
    found = kit.compare(*runs(a, a + np.linspace(-0.2, 0.3, 50)), "wer")
    text = str(found).split("difference ")[1].split(" (")[0]
    numbers = text.replace("[", "").replace("]", "").replace(",", "").split()
    assert len({len(n.split(".")[1]) for n in numbers}) == 1, text
