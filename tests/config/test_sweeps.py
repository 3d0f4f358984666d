"""The sweep grammar expands as Hydra's own multirun does, and refuses with named errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kit.config import ConfigError
from kit.config._sweeps import expand_sweep, is_sweep, search_space

GRIDS = [
    ["beam=1,3,5"],
    ["beam=1,5", "engine=whisper,pocketsphinx"],
    ["beam=1,5", "seed=0", "engine=whisper,pocketsphinx"],
    ["lr=range(1,4)", "beam=choice(2,4)"],
    ["x=range(0,1,0.25)"],
    ["x=range(5,0,-2)"],
    ["name='a,b',c", "tags=[1,2]"],
    ["+extra=1,2"],
    ["beam=5"],
]


def hydra_multirun(overrides: list[str], folder: Path) -> list[list[str]]:
    """Run a real Hydra app with ``--multirun`` and return each job's overrides, in order."""
    import hydra
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    jobs: list[list[str]] = []

    @hydra.main(version_base="1.3", config_path=None, config_name=None)
    def app(cfg: object) -> None:
        jobs.append(list(HydraConfig.get().overrides.task))

    argv = sys.argv
    sys.argv = [
        "app",
        "--multirun",
        f"hydra.sweep.dir={folder}",
        "hydra/job_logging=none",
        "hydra/hydra_logging=none",
        *[line if line.startswith("+") else f"+{line}" for line in overrides],
    ]
    try:
        app()
    finally:
        sys.argv = argv
        GlobalHydra.instance().clear()
    return jobs


@pytest.mark.parametrize("overrides", GRIDS, ids=" ".join)
def test_a_grid_expands_to_the_jobs_of_hydras_own_multirun(
    overrides: list[str], tmp_path: Path
) -> None:
    # Hydra's app has no config, so every key is added (+); Kit's keys exist already.
    ours = expand_sweep(overrides)
    theirs = hydra_multirun(overrides, tmp_path)
    plain = [[line.lstrip("+") for line in job] for job in theirs]
    assert [[line.lstrip("+") for line in trial] for trial in ours] == plain


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["a=glob(*)"], "override 'a=glob(*)' is a glob: it picks among config group options"),
        (["lr=interval(0,1)"], "override 'lr=interval(0,1)' is a search space (interval)"),
        (["~a=1,2"], "override '~a=1,2' deletes a key and sweeps it at once"),
        (["a=range(0,10**9)"], "cannot parse override 'a=range(0,10**9)'"),
        (["a=range(0,1000000000)"], "the sweep 'a=range(0,1000000000)' makes more than 10,000"),
        (["a=range(3,3)"], "override 'a=range(3,3)' sweeps no value at all"),
        (["a=range(0,9,0)"], "override 'a=range(0,9,0)' is a range with step 0"),
        (["a=1,2", "a=3"], "override 'a=3' sets a again after 'a=1,2', in a sweep"),
        (["a@pkg=1,2"], "override 'a@pkg=1,2' names a package"),
    ],
)
def test_a_bad_sweep_names_its_override(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        expand_sweep(overrides)
    assert str(caught.value).split(": ", 1)[-1].startswith(message) or message in str(caught.value)
    assert "fix:" in str(caught.value)


def test_is_sweep_tells_a_sweep_from_plain_overrides() -> None:
    assert not is_sweep(["a=1", "b='x,y'", "c=[1,2]"])
    assert is_sweep(["a=1", "b=x,y"])


def test_a_search_space_keeps_hydras_optuna_forms() -> None:
    dims, fixed = search_space(
        [
            "lr=tag(log, interval(1e-4, 1e-1))",
            "layers=int(interval(1, 8))",
            "beam=1,3,5",
            "engine=choice(whisper,pocketsphinx)",
            "seed=0",
        ]
    )
    assert fixed == ["seed=0"]
    assert [(d.key, d.kind, d.log, d.integer) for d in dims] == [
        ("lr", "interval", True, False),
        ("layers", "interval", False, True),
        ("beam", "choice", False, False),
        ("engine", "choice", False, False),
    ]
    assert (dims[0].low, dims[0].high) == (1e-4, 1e-1)
    assert dims[3].values == ("whisper", "pocketsphinx")


def test_a_search_refuses_a_log_interval_from_zero_and_no_swept_key() -> None:
    with pytest.raises(ConfigError, match=r"log-scale interval starting at 0"):
        search_space(["lr=tag(log, interval(0, 1))"])
    with pytest.raises(ConfigError, match=r"a search needs at least one swept key"):
        search_space(["seed=0"])


@pytest.mark.parametrize("written", ["a='1',3,false", "a=choice('1',3,false)"])
def test_a_searchs_choices_keep_their_types_in_both_forms(written: str) -> None:
    # Once the simple form gave Optuna three strings, and choice() wrote '1' back as 1.
    from kit.config import load_config
    from kit.config._sweeps import search_space

    (dim,), _ = search_space([written])
    assert [(type(v), v) for v in dim.values] == [(str, "1"), (int, 3), (bool, False)]
    read = [load_config({"a": 0}, [f"a={t}"]).a for t in dim.texts]
    assert [(type(v), v) for v in read] == [(str, "1"), (int, 3), (bool, False)]


@pytest.mark.parametrize("written", ["a='1',3,false", "a=choice('1',3,false)"])
def test_a_grids_choices_keep_their_types_in_both_forms(written: str) -> None:
    # A deliberate difference from Hydra's own multirun: it writes choice('1',...)'s
    # first job as `a=1`, which its job then reads as the number 1.
    from kit.config import load_config

    read = [load_config({"a": 0}, trial).a for trial in expand_sweep([written])]
    assert [(type(v), v) for v in read] == [(str, "1"), (int, 3), (bool, False)]


def test_a_shuffled_grid_pairs_each_value_with_its_own_text() -> None:
    # Values and texts come from one draw: two draws would give '1' another's text.
    from kit.config import load_config

    for _ in range(5):
        read = [load_config({"a": 0}, t).a for t in expand_sweep(["a=shuffle('1','2','3')"])]
        assert sorted(read) == ["1", "2", "3"] and all(type(v) is str for v in read)
