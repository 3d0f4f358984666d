"""kit.cluster.scale_out_command: the kit submit line for a config as edited, headless."""

from __future__ import annotations

from pathlib import Path

import pytest

import kit
from tests.workloads import toy_config


def test_a_config_file_below_here_is_named_as_it_is_with_the_edits_and_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("configs").mkdir()
    Path("configs/exp.yaml").write_text("factor: 2\noffset: 1\n")
    base = kit.load_config("configs/exp.yaml")
    edited = kit.load_config(base, ["factor=5", "+beam=4"])
    command = kit.cluster.scale_out_command(base, edited, config_path="configs/exp.yaml")
    assert command == (
        "kit submit configs/exp.yaml factor=5 +beam=4 +parallel.env=slurm "
        "+parallel.options.cores=1 +parallel.options.memory=2GB"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs"]  # nothing written


def test_a_config_from_elsewhere_is_saved_with_the_runs_and_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-package" / "decode.yaml"
    base = toy_config()
    command = kit.cluster.scale_out_command(base, base, config_path=elsewhere)
    assert command.startswith("kit submit runs/scale-out/decode.yaml +parallel.env=slurm")
    assert kit.load_config("runs/scale-out/decode.yaml") == base
    other = toy_config(factor=9)  # another config of the same name: a file of its own
    again = kit.cluster.scale_out_command(other, other, config_path=elsewhere).split()[2]
    assert again == f"runs/scale-out/decode-{kit.config.config_hash(other)[:8]}.yaml"
    assert kit.load_config("runs/scale-out/decode.yaml") == base


def test_a_cluster_that_is_no_job_queue_gets_no_job_resources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    base = kit.load_config({"parallel": {"env": "local"}})
    command = kit.cluster.scale_out_command(
        base, base, ["parallel.env=remote", "+parallel.address=tcp://head:8786"]
    )
    assert command.split()[3:] == ["parallel.env=remote", "+parallel.address=tcp://head:8786"]
