"""A sweep over normalisers decodes each utterance once, on a real cluster, with PocketSphinx."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kit
from kit.asr import DecodeProvider, DecodeRunner
from kit.examples.asr import CONFIG_PATH

pytest.importorskip("pocketsphinx")

ITEMS = 6


def sweep(corpus: Path, folder: Path, *overrides: str) -> kit.SweepResult:
    base = [f"data.root={corpus}", "decoder.engine=pocketsphinx", f"items.stop={ITEMS}"]
    grid = ["scoring.normalizer=whisper,basic,none"]
    return kit.sweep(str(CONFIG_PATH), [*base, *grid, *overrides], output_dir=folder)


def test_a_sweep_over_normalisers_decodes_once_and_scores_each_as_a_fresh_decoding_would(
    corpus: Path, tmp_path: Path
) -> None:
    reused = sweep(corpus, tmp_path / "reused")
    fresh = sweep(corpus, tmp_path / "fresh", "runner.reuse=false")
    runs = [r for r in reused.results if r is not None]
    assert [(r.stats.computed, r.stats.reused) for r in runs] == [
        (ITEMS, 0),
        (0, ITEMS),
        (0, ITEMS),
    ]
    ignore = {"decode_seconds", "warmup", "metrics"}  # a decoding's own time, run to run
    for mine, theirs in zip(runs, fresh.results, strict=True):
        assert theirs is not None
        for a, b in zip(mine.records, theirs.records, strict=True):
            assert {k: v for k, v in a.items() if k not in ignore} == {
                k: v for k, v in b.items() if k not in ignore
            }
            assert (a["metrics"]["wer"], a["metrics"]["cer"]) == (
                b["metrics"]["wer"],
                b["metrics"]["cer"],
            )
        assert mine.summary["wer"] == theirs.summary["wer"]
    # Each trial's records are scored under its own normaliser, the reused ones too.
    assert all(r["ref_norm"] == r["ref"] for r in runs[2].records)  # normalizer=none


def test_an_utterance_whose_audio_changed_is_decoded_again_and_the_rest_reused(
    corpus: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(corpus, data)
    cfg = kit.load_config(
        CONFIG_PATH, [f"data.root={data}", "decoder.engine=pocketsphinx", f"items.stop={ITEMS}"]
    )
    first = DecodeRunner(DecodeProvider(cfg), output_dir=tmp_path / "a").run(ITEMS)
    # Utterance 2's recording is replaced by utterance 3's, under its own name.
    entries = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    (data / entries[2]["audio"]).write_bytes((data / entries[3]["audio"]).read_bytes())
    again = DecodeRunner(DecodeProvider(cfg), output_dir=tmp_path / "b").run(ITEMS)
    assert (again.stats.computed, again.stats.reused) == (1, ITEMS - 1)
    assert again.records[2]["hyp"] == first.records[3]["hyp"] != first.records[2]["hyp"]
