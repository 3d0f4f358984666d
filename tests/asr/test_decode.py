"""`kit.asr.decode`'s provider: what a run of decode.yaml checks and names before it runs."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

import kit
from kit.asr import DecodeProvider, DecodeRunner
from kit.asr.data import read_manifest
from kit.cli import EXIT_USAGE, main
from tests.servers import dask_cluster

ROOT = Path(__file__).resolve().parents[2]
DECODE = str(ROOT / "kit" / "examples" / "asr" / "decode.yaml")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ("data.root={gone}", "data.manifest: no such file: {gone}/corpus.jsonl; build the corpus"),
        ("data.kaldi={gone}", "data.kaldi: {gone} has no wav.scp"),
    ],
)
def test_a_corpus_that_is_not_there_is_said_in_one_line_before_a_cluster_starts(
    tmp_path: Path, data: str, said: str
) -> None:
    gone = tmp_path / "not-made-yet"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        run = ["run", DECODE, data.format(gone=gone), "items.stop=2"]  # so no count reads it
        code = main([*run, f"output_dir={tmp_path / 'out'}"])
    assert code == EXIT_USAGE
    message = err.getvalue()
    assert said.format(gone=gone) in message
    assert "Traceback" not in message and "worker" not in message
    assert not (tmp_path / "out").exists()


def test_two_folders_relative_corpora_are_two_envs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = []
    for who in ("ada", "bob"):
        (tmp_path / who).mkdir()
        monkeypatch.chdir(tmp_path / who)
        given = kit.load_config(DECODE)  # data.root: runs/asr-data
        provider = DecodeProvider(given)
        assert provider.config.data.manifest == f"{tmp_path / who}/runs/asr-data/corpus.jsonl"
        assert given.data.root == "runs/asr-data"  # the caller's config is theirs
        names.append(provider.env_name())
    assert names[0] != names[1]


def test_a_remote_clusters_workers_read_a_corpus_named_from_the_drivers_folder(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers start in a folder of their own, as a scheduler someone started elsewhere.
    (tmp_path / "cluster").mkdir()
    (tmp_path / "me" / "runs").mkdir(parents=True)
    (tmp_path / "me" / "runs" / "asr-data").symlink_to(corpus)
    monkeypatch.chdir(tmp_path / "me")
    with dask_cluster(tmp_path / "cluster", n_workers=1) as address:
        provider = DecodeProvider(kit.load_config(DECODE, ["decoder.engine=pocketsphinx"]))
        remote = {"env": "remote", "address": address}
        result = DecodeRunner(provider, output_dir=tmp_path / "out", parallel=remote).run(range(3))
    assert not result.errors
    assert [r["id"] for r in result.records] == [
        e["id"] for e in read_manifest(corpus / "corpus.jsonl")[:3]
    ]
