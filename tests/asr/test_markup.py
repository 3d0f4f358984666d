"""SCTK's transcript markup in a reference or hypothesis is refused by name, not scored."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kit.asr import DecodeProvider, DecodeRunner, Recognizer
from kit.asr.rescore import score_run
from kit.asr.wer import MarkupError, score
from tests.speech import write_wav


@pytest.mark.parametrize(
    ("ref", "named"),
    [
        ("the { cat / cats } sat", "an alternation { a / b }"),
        ("yes @ no", "the null word @"),
        (";; a comment", "a ;; comment line"),
    ],
)
def test_a_reference_with_sctk_markup_is_refused_naming_it(ref: str, named: str) -> None:
    with pytest.raises(MarkupError, match=f"the reference holds SCTK markup, {named}"):
        score(ref, "the cat sat")


@pytest.mark.parametrize(
    ("hyp", "named"),
    [
        ("the { cat / cats } sat", "an alternation { a / b }"),
        ("the @ sat", "the null word @"),
    ],
)
def test_a_hypothesis_with_sctk_markup_is_refused_naming_it(hyp: str, named: str) -> None:
    with pytest.raises(MarkupError, match=f"the hypothesis holds SCTK markup, {named}"):
        score("the cat sat", hyp)


def test_a_word_tag_is_refused_unless_a_whisper_normaliser_drops_it() -> None:
    # SCTK's own test set scores `b;reftag1` against `b;hyptag1` as correct: the tag is markup.
    with pytest.raises(MarkupError, match=r"the reference holds SCTK markup, a word's tag"):
        score("a b;reftag1 c", "a b c", "none")
    with pytest.raises(MarkupError, match=r"hypothesis holds SCTK markup, a word's tag \(word;"):
        score("a b c", "a b;hyptag1 c", "none")
    assert score("a b\\;b c", "a b\\;b c", "none")["errors"] == 0  # an escaped one is the word's
    assert score("a b;reftag1 c", "a b reftag1 c", "basic")["errors"] == 0  # dropped
    assert score("yes no", "yes (uh) no", "none")["insertions"] == 1  # (x) is a reference's


def test_an_optional_word_is_refused_unless_a_whisper_normaliser_drops_it() -> None:
    with pytest.raises(MarkupError, match=r"an optionally deletable word \(x\), at ' \(uh\) '"):
        score("yes (uh) no", "yes no", "none")
    assert score("yes (uh) no", "yes no", "basic")["errors"] == 0  # dropped, as Whisper's are


class Says:
    """A recognizer that hears what the reference says, markup aside."""

    def decode(self, pcms: Sequence[bytes], beam_size: int | None = None) -> list[str]:
        return ["the cat sat" for _ in pcms]


class Hears(DecodeProvider):
    @staticmethod
    def recognizer(settings: dict[str, Any]) -> Recognizer:
        return Says()


def test_a_decoding_fails_the_marked_up_utterance_naming_the_markup_and_scores_the_rest(
    tmp_path: Path,
) -> None:
    lines = [
        {"id": "plain", "audio": str(write_wav(tmp_path / "a.wav")), "text": "the cat sat"},
        {
            "id": "marked",
            "audio": str(write_wav(tmp_path / "b.wav")),
            "text": "the { cat / cats } sat",
        },
    ]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    provider = Hears({"data": {"manifest": str(tmp_path / "set.jsonl")}})
    result = DecodeRunner(provider, output_dir=tmp_path / "run").run(2)
    assert [e.index for e in result.errors] == [1]
    assert "the reference holds SCTK markup, an alternation" in result.errors[0].message
    assert result.summary["utterances"] == 1
    # kit score of a stored run names the run and the utterance.
    stored = result.records[0]
    marked = {**stored, "id": "marked", "ref": "yes @ no"}
    with pytest.raises(MarkupError, match=r"run: utterance 'marked': .* the null word @"):
        score_run(
            tmp_path / "run", result=type(result)(**{**vars(result), "records": [stored, marked]})
        )
