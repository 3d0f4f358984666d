"""Word and character error rates, counted as ``sclite`` counts them, after Whisper's normalisation.

Reference and hypothesis both go through ``whisper-normalizer``'s
``EnglishTextNormalizer`` (case, punctuation, British/American spelling,
numbers to digits), the normalisation Whisper's own WER figures use. One
step is added for digit strings: that normaliser turns "zero one six six"
into the single word "0166" and a hypothesis "0166" into "166", so a digit
string would count as one word and a leading zero would be lost; here every
digit is a word of its own, in both texts, before and after normalising.

The normalised texts are aligned with sclite's weights and tie-breaking
(:mod:`kit.asr.align`): word counts are what ``sclite -i rm``
reports on the exported ``ref.trn``/``hyp.trn``, character counts what
``sclite -c`` reports (characters of the words, spaces left out).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from kit._base.extras import install
from kit.asr.align import Alignment, align, ops

_ERRORS = ("substitutions", "deletions", "insertions")

_DIGIT_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
}


@cache
def _normalizer() -> Any:
    try:
        from whisper_normalizer.english import EnglishTextNormalizer
    except ImportError:
        raise ImportError(
            f"the decoding example's WER needs whisper-normalizer: {install('asr')}"
        ) from None
    return EnglishTextNormalizer()


def _one_digit_per_word(text: str) -> str:
    return re.sub(r"(?<=\d)(?=\d)", " ", text)


def normalize(text: str) -> str:
    """Return ``text`` as the words WER counts: Whisper's normaliser, digits one per word.

    Examples
    --------
    >>> normalize("Zero, one, six six.")
    '0 1 6 6'
    >>> normalize("0166") == normalize("oh one six six")
    True
    >>> normalize("The colour of the sea; it's nice!")
    'the color of the sea it is nice'
    """
    words = _normalizer()(_one_digit_per_word(text)).split()
    return _one_digit_per_word(" ".join(_DIGIT_WORDS.get(word, word) for word in words))


def _basic(text: str) -> str:
    from whisper_normalizer.basic import BasicTextNormalizer

    return " ".join(BasicTextNormalizer()(text).split())


def _none(text: str) -> str:
    return " ".join(text.split())


#: The normalisers a config or ``kit score --normalizer`` names; a dotted path names your own.
NORMALIZERS: dict[str, Callable[[str], str]] = {
    "whisper": normalize,
    "basic": _basic,
    "none": _none,
}


@cache
def normalizer(name: str = "whisper") -> Callable[[str], str]:
    """Return the text normaliser ``name``: ``whisper``, ``basic``, ``none``, or a dotted path.

    ``whisper`` is :func:`normalize`; ``basic`` is Whisper's language-neutral
    normaliser (lower case, punctuation and symbols to spaces); ``none`` only
    splits on white space. ``package.module.function`` (or
    ``package.module:function``) is your own function from text to text.

    Examples
    --------
    >>> normalizer("basic")("Hello, World!"), normalizer("none")("Hello,  World!")
    ('hello world', 'Hello, World!')
    >>> normalizer("string.capwords")("it's nice")
    "It's Nice"
    >>> normalizer("whispr")
    Traceback (most recent call last):
    ...
    ValueError: normalizer 'whispr': choose whisper, basic or none, or give the dotted path ...
    """
    if name in NORMALIZERS:
        return NORMALIZERS[name]
    how = (
        "choose whisper, basic or none, or give the dotted path of a function from text "
        "to text (mypkg.norm.normalize)"
    )
    module, sep, attribute = name.replace(":", ".").rpartition(".")
    if not sep or not module:
        raise ValueError(f"normalizer {name!r}: {how}")
    try:
        found = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        raise ValueError(f"normalizer {name!r}: cannot import {module} ({exc}); {how}") from None
    except AttributeError:
        raise ValueError(f"normalizer {name!r}: {module} has no {attribute!r}; {how}") from None
    if not callable(found):
        raise ValueError(f"normalizer {name!r}: {type(found).__name__} is not callable; {how}")
    checked: Callable[[str], str] = found
    return checked


def score(
    ref: str, hyp: str, normalize_with: str = "whisper", *, chars: bool = True
) -> dict[str, Any]:
    """Compare one reference and hypothesis after normalising both (:func:`normalizer`).

    Returns the normalised pair, the word error counts (``words`` is the
    number of reference words) and, unless ``chars=False``, the character
    error counts (``chars``: the reference's characters, spaces left out).

    Examples
    --------
    >>> s = score("two six zero", "2 6 0 1")
    >>> s["ref_norm"], s["hyp_norm"], s["errors"], s["insertions"], s["words"]
    ('2 6 0', '2 6 0 1', 1, 1, 3)
    >>> s = score("the cat", "the cut")
    >>> s["errors"], s["words"], s["char_errors"], s["chars"]
    (1, 2, 1, 6)
    """
    return scored(ref, hyp, normalize_with, chars=chars)[0]


#: SCTK's transcript markup that sclite reads as more than words, and what it means there.
_MARKUP = (
    (re.compile(r"\{[^{}]*/[^{}]*\}"), "an alternation { a / b }: either is correct"),
    (re.compile(r"(?:^|\s)@(?:\s|$)"), "the null word @: nothing there is correct"),
    (re.compile(r"^\s*;;"), "a ;; comment line"),
)
#: Optionally deletable words, ``(uh)``: Whisper's normalisers drop what is in parentheses.
_OPTIONAL = (re.compile(r"(?:^|\s)\([^()\s]+\)(?:\s|$)"), "an optionally deletable word (x)")
#: A word's tags, ``b;tag``: sclite compares the word alone (``\;`` is a semicolon of the word).
_TAGS = (re.compile(r"\S*[^\s\\];\S*"), "a word's tag (word;tag): sclite compares the word alone")
#: The normalisers that drop parentheses and semicolons (Whisper's two).
_DROPS_PARENTHESES = ("whisper", "basic")


class MarkupError(ValueError):
    """A transcript holds SCTK markup, which Kit would score as words (:func:`sctk_markup`)."""


def sctk_markup(
    ref: str, normalize_with: str = "whisper", *, hypothesis: bool = False
) -> str | None:
    """Say which of SCTK's transcript markup ``ref`` holds, or None.

    sclite reads alternations, the null word ``@``, ``;;`` comments and,
    but for Whisper's normalisers, which drop them, optionally deletable
    words ``(x)`` and word tags ``word;tag`` as markup; Kit would count
    them as words. So a transcript that holds them is refused by name, not
    scored otherwise than sclite. A ``hypothesis`` is read for all but
    optionally deletable words, which sclite takes from references.

    Examples
    --------
    >>> sctk_markup("the { cat / cats } sat")
    "an alternation { a / b }: either is correct, at '{ cat / cats }'"
    >>> sctk_markup("yes (uh) no", "none"), sctk_markup("yes (uh) no")
    ("an optionally deletable word (x), at ' (uh) '", None)
    >>> sctk_markup("b;tag1 c", "none", hypothesis=True)
    "a word's tag (word;tag): sclite compares the word alone, at 'b;tag1'"
    """
    kept = normalize_with not in _DROPS_PARENTHESES
    kinds = [
        *_MARKUP,
        *([_TAGS] if kept else []),
        *([_OPTIONAL] if kept and not hypothesis else []),
    ]
    for pattern, what in kinds:
        found = pattern.search(ref)
        if found is not None:
            return f"{what}, at {found.group(0)!r}"
    return None


def scored(
    ref: str, hyp: str, normalize_with: str = "whisper", *, chars: bool = True
) -> tuple[dict[str, Any], Alignment]:
    """:func:`score`, and the words' alignment it counted (for views of the errors).

    Raises
    ------
    MarkupError
        When the reference or the hypothesis holds SCTK markup (:func:`sctk_markup`).
    """
    for side, text in (("reference", ref), ("hypothesis", hyp)):
        markup = sctk_markup(text, normalize_with, hypothesis=side == "hypothesis")
        if markup is not None:
            raise MarkupError(
                f"the {side} holds SCTK markup, {markup}, which sclite scores as markup and "
                f"Kit would score as words: write the {side} out plainly (one reading), or "
                "score with sclite on the files `kit export OUTPUT_DIR --normalizer none` writes"
            )
    norm = normalizer(normalize_with)
    ref_norm, hyp_norm = str(norm(ref)), str(norm(hyp))
    alignment = align(ref_norm.split(), hyp_norm.split())
    words = alignment.counts()
    found: dict[str, Any] = {
        "ref_norm": ref_norm,
        "hyp_norm": hyp_norm,
        **{key: words[key] for key in _ERRORS},
        "errors": sum(words[key] for key in _ERRORS),
        "words": len(ref_norm.split()),
    }
    if chars:
        # Only the counts of characters are kept: their steps, not an Alignment of them.
        letters = ops(ref_norm.replace(" ", ""), hyp_norm.replace(" ", ""))
        counted = dict(zip(_ERRORS, (letters.count(op) for op in (b"S", b"D", b"I")), strict=True))
        found.update({f"char_{key}": counted[key] for key in _ERRORS})
        found["char_errors"] = sum(counted.values())
        found["chars"] = len(ref_norm.replace(" ", ""))
    return found, alignment


def corpus_wer(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Corpus WER of scored records: all errors over all reference words.

    Examples
    --------
    >>> corpus_wer([score("one two", "one two"), score("three four", "three")])
    {'wer': 0.25, 'substitutions': 0, 'deletions': 1, 'insertions': 0, 'words': 4}
    """
    totals = {
        key: sum(int(r[key]) for r in records)
        for key in ("substitutions", "deletions", "insertions", "words")
    }
    errors = totals["substitutions"] + totals["deletions"] + totals["insertions"]
    return {"wer": errors / max(1, totals["words"]), **totals}


def corpus_cer(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Corpus CER of scored records: all character errors over all reference characters.

    Records scored before Kit counted characters have none: then ``{}``.

    Examples
    --------
    >>> corpus_cer([score("the cat", "the cut"), score("a dog", "a dog")])
    {'cer': 0.1, 'char_substitutions': 1, 'char_deletions': 0, 'char_insertions': 0, 'chars': 10}
    """
    keys = [f"char_{key}" for key in _ERRORS]
    if not records or any("chars" not in r for r in records):
        return {}
    totals = {key: sum(int(r[key]) for r in records) for key in (*keys, "chars")}
    errors = sum(totals[key] for key in keys)
    return {"cer": errors / max(1, totals["chars"]), **totals}


def wer_by(records: Sequence[dict[str, Any] | None], key: str) -> dict[str, float]:
    """Corpus WER per value of ``key`` (e.g. ``"speaker"``), for the records that have it.

    Examples
    --------
    >>> records = [{"speaker": "a", **score("one", "one")}, {"speaker": "b", **score("one", "")}]
    >>> wer_by(records, "speaker")
    {'a': 0.0, 'b': 1.0}
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record is not None and record.get(key) is not None:
            groups.setdefault(str(record[key]), []).append(record)
    return {name: corpus_wer(group)["wer"] for name, group in sorted(groups.items())}


def differences(a: Any, b: Any) -> list[dict[str, Any]]:
    """Return the utterances two runs over the same items decoded differently, worst change first.

    ``a`` and ``b`` are :class:`kit.RunResult` s (two trials of a sweep, say);
    utterances are paired by index, and only those both decoded count. Each
    row: the utterance (``id``, ``speaker``, ``ref``), each run's hypothesis
    and errors, and ``change`` (b's errors minus a's: below 0, b did better).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> def run(hyps):  # what a RunResult holds: indices and records
    ...     refs = ["one two", "three"]
    ...     records = [{"id": str(i), "ref": ref, "hyp": hyp, **score(ref, hyp)}
    ...                for i, (ref, hyp) in enumerate(zip(refs, hyps))]
    ...     return SimpleNamespace(indices=[0, 1], records=records)
    >>> rows = differences(run(["one two", "tree"]), run(["one", "three"]))
    >>> [(row["id"], row["errors_a"], row["errors_b"], row["change"]) for row in rows]
    [('0', 0, 1, 1), ('1', 1, 0, -1)]
    """
    theirs = {
        index: record
        for index, record in zip(b.indices, b.records, strict=True)
        if record is not None
    }
    rows = []
    for index, mine in zip(a.indices, a.records, strict=True):
        other = theirs.get(index)
        if mine is None or other is None or mine.get("hyp") == other.get("hyp"):
            continue
        rows.append(
            {
                "id": mine.get("id", index),
                "speaker": mine.get("speaker"),
                "ref": mine.get("ref"),
                "hyp_a": mine.get("hyp"),
                "hyp_b": other.get("hyp"),
                "errors_a": int(mine["errors"]),
                "errors_b": int(other["errors"]),
                "change": int(other["errors"]) - int(mine["errors"]),
            }
        )
    return sorted(rows, key=lambda row: -abs(row["change"]))
