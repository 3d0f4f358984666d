"""What ``kit check`` asks of the decoding runner: every recording's header, durations, scores."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from kit.asr import DecodeProvider, DecodeRunner, score
from tests.speech import write_wav


def test_every_recording_of_the_set_is_checked_by_its_header(tmp_path: Path) -> None:
    good = write_wav(tmp_path / "good.wav", seconds=0.5)
    entries = [
        {"id": "a", "audio": str(good), "text": "hello"},
        {"id": "b", "audio": str(write_wav(tmp_path / "phone.wav", rate=8000)), "text": "hi"},
        {"id": "c", "audio": str(tmp_path / "gone.wav"), "text": "hi"},
        {"id": "d", "audio": str(good), "text": "hi", "start": 0.0, "end": 2.0},
        {"id": "e", "audio": str(good), "text": None},
    ]
    runner = DecodeRunner(DecodeProvider(OmegaConf.create({})))
    problems = runner.check_items(range(len(entries)), {"dataset": entries})
    assert problems[0].startswith(f"item 1: {tmp_path / 'phone.wav'} is 8000 Hz, 1 channel(s)")
    assert problems[1:] == [
        f"item 2: no such file: {tmp_path / 'gone.wav'}",
        "item 3: its segment ends at 2.0 s, after the recording's 0.50 s",
        "item 4: no text to score against",
    ]


def test_the_sample_is_scored_with_intervals_and_timings_are_not_compared() -> None:
    records = [
        {**score("the cat sat", "the cat sat"), "duration": 1.0, "decode_seconds": 0.2},
        {**score("a dog ran", "a log ran"), "duration": 1.0, "decode_seconds": 0.3},
        {**score("one two", "one two"), "duration": 1.0, "decode_seconds": 0.1},
    ]
    summary = DecodeRunner(DecodeProvider(OmegaConf.create({}))).check_summary(records)
    assert summary["wer"] == round(1 / 8, 4)
    low, high = summary["wer_95"]
    assert 0.0 <= low <= summary["wer"] <= high
    assert {"decode_seconds", "metrics.rtf", "warmup"} <= set(DecodeRunner.check_ignore)
    assert DecodeRunner.cost_by == "duration"
