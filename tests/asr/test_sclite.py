"""Kit's error counts are sclite's: NIST's scorer (Debian's sctk) reads Kit's exported files."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import kit
from kit.asr import DecodeProvider, DecodeRunner
from kit.asr.export import lines
from kit.asr.wer import MarkupError, corpus_cer, corpus_wer, score
from kit.cli import main
from kit.examples.asr import CONFIG_PATH

pytest.importorskip("pocketsphinx")
pytest.importorskip("jiwer")

# Words the normaliser rewrites (numbers, spellings, contractions, case) among
# plain ones, so the pairs also test that sclite sees the texts Kit scored.
WORDS = [
    "the",
    "a",
    "cat",
    "sat",
    "on",
    "mat",
    "dog",
    "ran",
    "to",
    "two",
    "too",
    "colour",
    "color",
    "it's",
    "is",
    "nine",
    "9",
    "Mr.",
    "mister",
    "zero",
    "one",
    "oh",
    "six",
    "Hello,",
    "world!",
    "fine",
    "find",
    "mind",
]


def sclite() -> list[str]:
    """The command that runs sclite: Debian's sctk installs it behind its ``sctk`` front end."""
    if shutil.which("sclite"):
        return ["sclite"]
    if shutil.which("sctk"):
        return ["sctk", "sclite"]
    if os.environ.get("CI"):
        pytest.fail("sctk must be installed in CI (.ci/system-deps.sh)")
    pytest.skip("sclite missing (apt-get install sctk)")


def per_utterance(ref: Path, hyp: Path, *options: str) -> dict[str, tuple[int, ...]]:
    """sclite's ``(#C #S #D #I)`` per utterance id, from its alignment dump."""
    out = subprocess.run(
        [
            *sclite(),
            "-r",
            str(ref),
            "trn",
            "-h",
            str(hyp),
            "trn",
            "-i",
            "rm",
            *options,
            "-o",
            "pra",
            "stdout",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    found = re.findall(
        r"^id: \((\S+)\)\nScores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)", out, re.M
    )
    return {uid: tuple(int(n) for n in counts) for uid, *counts in found}


def pairs(n: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        ref = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))
        hyp = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))
        speaker = f"spk{i % 3}"
        records.append({"id": f"u{i:05d}", "speaker": speaker, "ref": ref, "hyp": hyp})
    return records


def test_kit_counts_every_utterances_words_and_characters_as_sclite_does(tmp_path: Path) -> None:
    # Random pairs over a small vocabulary: many errors and many tied alignments, where
    # aligners of the same edit distance split errors differently (jiwer's and kaldialign's
    # splits differ from sclite's here).
    records = [{**r, **score(str(r["ref"]), str(r["hyp"]))} for r in pairs(1500, seed=3)]
    ref, hyp = tmp_path / "ref.trn", tmp_path / "hyp.trn"
    ref_text, hyp_text = lines(records, "trn")
    ref.write_text(ref_text)
    hyp.write_text(hyp_text)
    words, chars = per_utterance(ref, hyp), per_utterance(ref, hyp, "-c")
    assert len(words) == len(chars) == len(records)
    for record in records:
        uid = f"{record['speaker']}-{record['id']}"
        kit_words = (
            int(record["words"])
            - int(record["substitutions"])  # what is left of the reference is correct
            - int(record["deletions"]),
            record["substitutions"],
            record["deletions"],
            record["insertions"],
        )
        kit_chars = (
            int(record["chars"])
            - int(record["char_substitutions"])
            - int(record["char_deletions"]),
            record["char_substitutions"],
            record["char_deletions"],
            record["char_insertions"],
        )
        assert words[uid] == kit_words, (record["ref_norm"], record["hyp_norm"])
        assert chars[uid] == kit_chars, (record["ref_norm"], record["hyp_norm"])
    totals = corpus_wer(records)
    assert sum(c[1] for c in words.values()) == totals["substitutions"]
    assert corpus_cer(records)["chars"] == sum(sum(c[:3]) for c in chars.values())


def test_kit_export_writes_a_decoded_runs_files_that_sclite_scores_as_kit_did(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    cfg = kit.load_config(
        CONFIG_PATH,
        [f"data.root={corpus}", "decoder.engine=pocketsphinx"],
    )
    items = [*range(0, 100, 9)]  # every voice, sentences and digit strings
    result = DecodeRunner(DecodeProvider(cfg), output_dir=out).run(items)
    assert result.status is kit.RunStatus.COMPLETED
    assert main(["export", str(out), "--format", "trn", "-o", str(tmp_path / "trn")]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {tmp_path / 'trn' / 'ref.trn'}" in printed
    assert re.search(r"score them with sclite: (sctk )?sclite -r \S+ref.trn trn -h ", printed)
    characters = "\n  characters: (sctk )?sclite -r \\S+ref.trn trn -h \\S+hyp.trn "
    characters += "trn -i rm -c -e utf-8 -o sum"
    assert re.search(characters, printed)
    words = per_utterance(tmp_path / "trn" / "ref.trn", tmp_path / "trn" / "hyp.trn")
    assert len(words) == len(items)
    for key, column in (("substitutions", 1), ("deletions", 2), ("insertions", 3)):
        assert result.summary[key] == sum(counts[column] for counts in words.values()), key
    assert result.summary["words"] == sum(sum(counts[:3]) for counts in words.values())
    # ESPnet3's files: the texts as decoded, one "id text" line each.
    assert main(["export", str(out), "--format", "scp", "-o", str(tmp_path / "scp")]) == 0
    hyp_scp = (tmp_path / "scp" / "hyp.scp").read_text().splitlines()
    first = result.records[0]
    assert hyp_scp[0] == f"{first['id']} {first['hyp']}".rstrip()
    assert len(hyp_scp) == len(items)


def test_exporting_what_is_no_decoding_run_says_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"kit: error: {tmp_path} holds no run or sweep; give the output_dir of one\n"
    )
    with pytest.raises(ValueError, match=r"item 1: utterance id 'u 1' has a space or a paren"):
        lines(
            [
                {"id": "u0", "ref": "a", "hyp": "a", **score("a", "a")},
                {"id": "u 1", "ref": "a", "hyp": "a", **score("a", "a")},
            ],
            "trn",
            where="the run",
        )
    with pytest.raises(ValueError, match=r"item 0: the record has no 'ref' and 'hyp'; "):
        lines([{"idx": 0}], "trn")
    with pytest.raises(ValueError, match=r"item 1: utterance id 'u0' appears twice"):
        record = {"id": "u0", "ref": "a", "hyp": "a", **score("a", "a")}
        lines([record, record], "scp")


def test_a_hundred_thousand_random_pairs_count_as_sclite_counts_them(tmp_path: Path) -> None:
    # The compiled alignment on many more pairs than the test above, texts as they are
    # (no normaliser): words, and characters with -e utf-8, for every utterance.
    rng = random.Random(58)
    vocabulary = [*WORDS[:12], "café", "naïve", "東京", "大学"]
    ref_lines, hyp_lines, ours = [], [], {}
    for i in range(100_000):
        ref = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 8)))
        hyp = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 8)))
        uid = f"s-u{i:06d}"
        ref_lines.append(f"{ref} ({uid})\n")
        hyp_lines.append(f"{hyp} ({uid})\n")
        found = score(ref, hyp, "none")
        ours[uid] = (found, len(ref.split()), len(ref.replace(" ", "")))
    ref_trn, hyp_trn = tmp_path / "ref.trn", tmp_path / "hyp.trn"
    ref_trn.write_text("".join(ref_lines), encoding="utf-8")
    hyp_trn.write_text("".join(hyp_lines), encoding="utf-8")
    words = per_utterance(ref_trn, hyp_trn)
    chars = per_utterance(ref_trn, hyp_trn, "-c", "-e", "utf-8")
    assert len(words) == len(chars) == len(ours)
    for uid, (found, n_words, n_chars) in ours.items():
        s, d, i = found["substitutions"], found["deletions"], found["insertions"]
        assert words[uid] == (n_words - s - d, s, d, i), uid
        s, d, i = found["char_substitutions"], found["char_deletions"], found["char_insertions"]
        assert chars[uid] == (n_chars - s - d, s, d, i), uid


#: SCTK's own trn test files (its ``src/sclite/testdata``), where they are given: they are not
#: part of Kit nor on a package index. Pairs of reference, hypothesis and sclite's id format.
SCTK_TESTDATA = os.environ.get(
    "KIT_SCTK_TESTDATA", str(Path(__file__).parents[3] / "shared" / "sctk-testdata")
)
SCTK_PAIRS = [
    ("csrnab.ref", "csrnab.hyp", "wsj"),
    ("csrnab1.ref", "csrnab1.hyp", "wsj"),
    ("tests.ref", "tests.hyp", "rm"),
    ("test.turkish.ref", "test.turkish.hyp", "rm"),
    ("test.ukranian.ref", "test.ukranian.hyp", "rm"),
    ("test.vietnamese.ref.trn", "test.vietnamese.hyp.trn", "rm"),
]


def trn_texts(path: Path) -> dict[str, str]:
    """A trn file's utterances by lower-cased id (sclite pairs ids without case)."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(.*)\(([^()]*)\)\s*$", line)
        if match and not line.lstrip().startswith(";;"):
            found[match.group(2).lower()] = match.group(1).strip()
    return found


def test_sctks_own_trn_test_files_count_as_sclite_counts_them() -> None:
    folder = Path(SCTK_TESTDATA)
    if not folder.is_dir():
        pytest.skip(f"SCTK's test files are not given (KIT_SCTK_TESTDATA, or {folder})")
    scored = refused = 0
    for ref_name, hyp_name, ids in SCTK_PAIRS:
        ref, hyp = folder / ref_name, folder / hyp_name
        # The csrnab files differ from their hypotheses in case: compared without it there.
        fold = ids == "wsj"
        case = [] if fold else ["-s"]
        options = ["-i", ids, "-e", "utf-8", *case, "-o", "pra", "stdout"]
        command = [*sclite(), "-r", str(ref), "trn", "-h", str(hyp), "trn"]
        found = {}
        for chars in ([], ["-c"]):
            out = subprocess.run(
                [*command, *chars, *options], capture_output=True, text=True, timeout=300
            )
            found[bool(chars)] = {
                uid.lower(): tuple(int(n) for n in counts)
                for uid, *counts in re.findall(
                    r"^id: \((\S+)\)\nScores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)",
                    out.stdout,
                    re.M,
                )
            }
        hyps = trn_texts(hyp)
        for uid, text in trn_texts(ref).items():
            said, heard = (
                (text.lower(), hyps.get(uid, "").lower()) if fold else (text, hyps.get(uid, ""))
            )
            try:
                ours = score(said, heard, "none")
            except MarkupError:
                refused += 1
                continue
            scored += 1
            s, d, i = ours["substitutions"], ours["deletions"], ours["insertions"]
            assert found[False][uid] == (len(said.split()) - s - d, s, d, i), (ref_name, uid)
            s, d, i = ours["char_substitutions"], ours["char_deletions"], ours["char_insertions"]
            n = len(said.replace(" ", ""))
            assert found[True][uid] == (n - s - d, s, d, i), (ref_name, uid)
    assert (scored, refused) == (65, 63)
