"""Validation of the kit-owned sections (parallel, runner)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit import ConfigError, load_config
from kit.config import PARALLEL_ENVS, ParallelConfig, parallel_section

ESPNET3_BLOCK = """\
parallel:
  env: slurm
  n_workers: 40
  options:
    account: bbjs-delta-cpu
    queue: cpu
    cores: 1
    processes: 4
    memory: 40GB
    death_timeout: 240
    job_extra_directives:
      - "--time 24:00:00"
      - "--ntasks-per-node=1"
"""


def test_an_espnet3_parallel_block_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "espnet3.yaml"
    path.write_text(ESPNET3_BLOCK)
    cfg = load_config(path)
    assert cfg.parallel.env == "slurm"
    assert cfg.parallel.options.job_extra_directives[1] == "--ntasks-per-node=1"
    assert set(cfg.parallel) == {"env", "n_workers", "options"}


@pytest.mark.parametrize("env", PARALLEL_ENVS)
def test_every_env_is_accepted(env: str) -> None:
    assert load_config({"parallel": {"env": env}}).parallel.env == env


def test_an_unknown_env_suggests_the_closest(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("parallel:\n  env: slurmm\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        "parallel.env: 'slurmm' is not a valid choice; did you mean 'slurm'?\n"
        "    expected: one of inline, local, local_gpu, remote, gateway, ssh, kube, slurm, pbs, "
        "sge, lsf, htcondor, moab, oar\n"
        "    full_key: parallel.env\n"
        f"    file: {path.resolve()}\n"
        "    fix: set it with `parallel.env=slurm`"
    )
    assert info.value.full_key == "parallel.env"
    assert info.value.source == str(path.resolve())


def test_the_file_named_is_the_one_that_set_the_value(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text("parallel:\n  env: lcoal\n")
    (tmp_path / "main.yaml").write_text("defaults:\n  - cluster\nname: x\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "main.yaml")
    assert info.value.source == str((tmp_path / "cluster.yaml").resolve())
    assert "did you mean 'local'?" in str(info.value)


def test_n_workers_must_be_positive() -> None:
    with pytest.raises(ConfigError, match=r"parallel.n_workers: must be at least 1, got 0"):
        load_config({"parallel": {"env": "local", "n_workers": 0}})


def test_n_workers_must_be_an_int() -> None:
    with pytest.raises(ConfigError, match=r"parallel.n_workers: 'many' is not a value of type int"):
        load_config({"parallel": {"n_workers": "many"}})


def test_an_unknown_parallel_key_suggests_the_closest_and_options() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"parallel": {"n_worker": 2}})
    message = str(info.value)
    assert message.startswith(
        "parallel.n_worker: unknown key 'n_worker' in section 'parallel'; did you mean 'n_workers'?"
    )
    assert "cluster-specific settings go under `parallel.options`" in message


def test_a_section_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(ConfigError, match="parallel: must be a mapping, got int"):
        load_config({"parallel": 3})


def test_a_null_section_is_the_sections_defaults() -> None:
    # `tracking: null` in a file was refused as "must be a mapping, got dict".
    from kit.config._schema import TrackingConfig, check_section

    cfg = load_config({"tracking": None})
    assert check_section(cfg, "tracking", TrackingConfig).mlflow is None


def test_missing_and_interpolated_values_are_checked_later() -> None:
    cfg = load_config({"parallel": {"env": "???", "n_workers": "${workers}"}, "workers": 2})
    assert cfg.parallel.n_workers == 2


@pytest.mark.parametrize(
    ("runner", "message"),
    [
        ({"chunk_size": "big"}, "runner.chunk_size: must be 'auto' or an integer >= 1, got 'big'"),
        ({"chunk_size": 0}, "runner.chunk_size: must be 'auto' or an integer >= 1, got 0"),
        ({"on_error": "ignore"}, "runner.on_error: 'ignore' is not a valid choice"),
        ({"retries": -1}, "runner.retries: must be at least 0, got -1"),
        ({"batch_size": 0}, "runner.batch_size: must be at least 1, got 0"),
        ({"retry": 1}, "runner.retry: unknown key 'retry' in section 'runner'; did you mean"),
    ],
)
def test_runner_section_errors(runner: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"runner": runner})
    assert str(info.value).startswith(message)


def test_a_valid_runner_section_loads() -> None:
    section = {"_target_": "pkg.Runner", "batch_size": 4, "chunk_size": 16, "on_error": "raise"}
    assert load_config({"runner": section}).runner.batch_size == 4


def test_parallel_section_gives_typed_defaults() -> None:
    section = parallel_section({"env": "remote", "address": "tcp://127.0.0.1:8786"})
    assert section == ParallelConfig(env="remote", n_workers=1, address="tcp://127.0.0.1:8786")
    assert parallel_section(None).env == "inline"


@pytest.mark.parametrize(
    ("env", "limit"), [("local", max(32, 8 * (os.cpu_count() or 1))), ("slurm", 10_000)]
)
def test_n_workers_is_bounded_for_the_kind_of_cluster(env: str, limit: int) -> None:
    parallel_section({"env": env, "n_workers": limit})
    with pytest.raises(ConfigError) as info:
        parallel_section({"env": env, "n_workers": 100_000_000})
    where = "this machine's cores" if env == "local" else "one run"
    assert str(info.value).splitlines()[0] == (
        f"parallel.n_workers: 100000000 workers is more than Kit starts for env {env!r} "
        f"(at most {limit}, for {where})"
    )


@pytest.mark.parametrize(
    ("tracking", "message"),
    [
        ({"mlflow": 5}, "tracking.mlflow: must be true, false or a tracking URI, got 5"),
        ({"tensorboard": ""}, "tracking.tensorboard: must be true, false or a folder, got ''"),
        ({"mlfow": True}, "tracking.mlfow: unknown key 'mlfow' in section 'tracking'; did you"),
        ({"records": "all"}, "tracking.records: 'all' is not a value of type bool"),
    ],
)
def test_tracking_section_errors(tracking: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"tracking": tracking})
    assert str(info.value).startswith(message)


def test_a_tracking_key_is_set_without_a_plus_even_without_the_section() -> None:
    cfg = load_config({"a": 1}, ["tracking.mlflow=sqlite:///runs/mlflow.db"])
    assert cfg.tracking.mlflow == "sqlite:///runs/mlflow.db"
    with pytest.raises(ConfigError) as info:
        load_config({"a": 1}, ["tracking.mlfow=true"])
    assert "did you mean 'tracking.mlflow'?" in str(info.value)
