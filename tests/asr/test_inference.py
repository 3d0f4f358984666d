"""ESPnet3's inference contract: its own tests of the provider and runner, ported, and infer.

The first half ports ESPnet3's ``test_inference_provider.py`` and
``test_inference_runner.py`` (where ESPnet3 patches its base runner's call to
return canned outputs, a real Kit run returns them from the dataset). The
second half runs an ESPnet3 inference config: PocketSphinx over Kaldi data
directories on a real LocalCluster, one folder of ``.scp`` files per test set.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

import kit
from kit._base.files import UnsafeFileError
from kit.asr import InferenceProvider, InferenceRunner, infer
from kit.asr.inference import OutputCheck, checked_forward, load_output_fn, write_scps
from kit.cli import main
from tests.asr.espnet3_recipe import (
    CountingProvider,
    DummyRunner,
    ListedProvider,
    ReturnsWhatItIsGiven,
)

# ------------------------------------------------------ ESPnet3's provider tests


def test_build_env_local_uses_cached_env_and_params() -> None:
    CountingProvider.dataset_calls = 0
    CountingProvider.model_calls = 0
    provider = CountingProvider(OmegaConf.create({"name": "test"}), params={"flag": True})

    env = provider.build_env_local()

    assert env["dataset"]["name"] == "test"
    assert env["model"]["name"] == "test"
    assert env["flag"] is True
    assert CountingProvider.dataset_calls == 1
    assert CountingProvider.model_calls == 1

    env["dataset"] = "mutated"
    assert provider.build_env_local()["dataset"] != "mutated"


def test_make_worker_setup_fn_rebuilds_env_and_captures_params() -> None:
    CountingProvider.dataset_calls = 0
    CountingProvider.model_calls = 0
    provider = CountingProvider(OmegaConf.create({"name": "worker"}), params={"token": "v1"})

    setup = provider.make_worker_setup_fn()
    provider.params["token"] = "v2"

    env1 = setup()
    env2 = setup()

    assert env1["token"] == "v1"
    assert env2["token"] == "v1"
    assert env1["dataset"] != env2["dataset"]
    assert env1["model"] != env2["model"]
    # Two calls, two builds. The copy of this test in ESPnet3's suite counts 3, which one
    # build per call (what its provider's setup_fn does too) does not give.
    assert CountingProvider.dataset_calls == 2
    assert CountingProvider.model_calls == 2


def test_the_worker_setup_and_the_checked_forward_travel_by_pickle() -> None:
    provider = CountingProvider(OmegaConf.create({"name": "w"}), params={"token": "v1"})
    setup = pickle.loads(pickle.dumps(provider.make_worker_setup_fn()))
    assert setup()["token"] == "v1"
    runner = DummyRunner(provider, idx_key="idx")
    forward = pickle.loads(pickle.dumps(runner.task_forward()))
    assert forward(3) == {"idx": 3, "hyp": "h", "ref": "r"}


# -------------------------------------------------------- ESPnet3's runner tests


def runner_over(
    items: list[Any], cls: type[InferenceRunner] = ReturnsWhatItIsGiven, **keys: Any
) -> InferenceRunner:
    return cls(ListedProvider({"items": items}), **keys)


def test_validate_output_accepts_expected_keys() -> None:
    runner = runner_over([], DummyRunner, idx_key="idx", hyp_key=["hyp", "alt"], ref_key="ref")
    runner._validate_output({"idx": 1, "hyp": "h", "alt": "a", "ref": "r"})


def test_resolve_idx_key_uses_default_utt_id() -> None:
    runner = runner_over([], DummyRunner)
    assert runner.resolve_idx_key({"utt_id": "u1", "hyp": "h", "ref": "r"}) == "utt_id"


def test_resolve_idx_key_uses_explicit_configured_key() -> None:
    runner = runner_over([], DummyRunner, idx_key="sample_id")
    assert runner.resolve_idx_key({"sample_id": "u1", "hyp": "h", "ref": "r"}) == "sample_id"


def test_resolve_idx_key_rejects_missing_configured_key() -> None:
    runner = runner_over([], DummyRunner, idx_key="sample_id")
    with pytest.raises(ValueError, match="idx_key='sample_id'"):
        runner.resolve_idx_key({"utt_id": "u1", "hyp": "h", "ref": "r"})


def test_validate_output_rejects_missing_or_extra_keys() -> None:
    runner = runner_over([], DummyRunner)
    with pytest.raises(ValueError, match="idx_key='utt_id'"):
        runner._validate_output({"hyp": "h"})
    runner._validate_output({"utt_id": "u1", "hyp": "h", "ref": "r", "extra": 0})


def test_validate_output_rejects_non_dict_and_idx_list() -> None:
    runner = runner_over([], DummyRunner)
    with pytest.raises(TypeError, match="Expected dict output"):
        runner._validate_output("bad")
    with pytest.raises(TypeError, match="'utt_id' must be a single value"):
        runner._validate_output({"utt_id": [1], "hyp": "h", "ref": "r"})


def test_validate_output_rejects_missing_hyp_ref_keys() -> None:
    runner = runner_over([], DummyRunner, idx_key="utt_id", hyp_key="hyp", ref_key="ref")
    with pytest.raises(ValueError, match="missing="):
        runner._validate_output({"utt_id": "u1"})


def test_call_rejects_non_dict_result_and_names_the_item() -> None:
    with pytest.raises(kit.RunError, match=r"item 0: TypeError: Expected dict output") as info:
        runner_over(["raw"])([0])
    assert info.value.result.records == [None]


def test_call_flattens_and_validates() -> None:
    items = [{"idx": 0, "hyp": "h0", "ref": "r0"}, [{"idx": 1, "hyp": "h1", "ref": "r1"}]]
    assert runner_over(items, idx_key="idx")([0, 1]) == [
        {"idx": 0, "hyp": "h0", "ref": "r0"},
        {"idx": 1, "hyp": "h1", "ref": "r1"},
    ]


def test_call_propagates_validation_error_and_keeps_the_good_items(tmp_path: Path) -> None:
    # ESPnet3 loses the whole call; Kit fails the item and keeps (and stores) the rest.
    good = {"utt_id": "u0", "hyp": "h", "ref": "r"}
    runner = runner_over([good, {"hyp": "h"}, good], output_dir=tmp_path / "run")
    with pytest.raises(kit.RunError, match=r"1 of 3 items failed: item 1: .*idx_key='utt_id'"):
        runner([0, 1, 2])
    again = kit.attach(tmp_path / "run").result()
    assert isinstance(again, kit.RunResult)
    assert again.records == [good, None, good]


def test_load_output_fn_rejects_missing_module() -> None:
    with pytest.raises(ModuleNotFoundError):
        load_output_fn("no.such.module.output_fn")


def test_forward_raises_without_input_key_kwarg() -> None:
    with pytest.raises(RuntimeError, match="input_key must be provided"):
        InferenceRunner.forward(0, dataset=[], model=lambda: None)


def test_forward_single_raises_key_error_for_missing_dataset_key() -> None:
    with pytest.raises(KeyError, match="Input key"):
        InferenceRunner.forward(
            0, dataset=[{"speech": 1.0}], model=lambda **kw: None, input_key="text"
        )


def test_forward_batched_raises_key_error_for_missing_dataset_key() -> None:
    with pytest.raises(KeyError, match="Input key"):
        InferenceRunner.forward(
            [0, 1],
            dataset=[{"speech": 1.0}, {"speech": 2.0}],
            model=lambda **kw: None,
            input_key="text",
        )


def echo(speech: Any) -> dict[str, Any]:
    return {"result": speech}


def test_forward_batched_returns_model_output_without_output_fn() -> None:
    dataset = [{"speech": 1.0}, {"speech": 2.0}]
    result = InferenceRunner.forward([0, 1], dataset=dataset, model=echo, input_key="speech")
    assert result == {"result": [1.0, 2.0]}


def test_forward_single_returns_model_output_without_output_fn() -> None:
    result = InferenceRunner.forward(0, dataset=[{"speech": 1.0}], model=echo, input_key="speech")
    assert result == {"result": 1.0}


def with_beam(speech: Any, beam_size: int) -> dict[str, Any]:
    return {"result": f"{speech}:{beam_size}"}


def test_forward_single_passes_model_kwargs_to_model() -> None:
    result = InferenceRunner.forward(
        0,
        dataset=[{"speech": 1.0}],
        model=with_beam,
        input_key="speech",
        model_kwargs={"beam_size": 2},
    )
    assert result == {"result": "1.0:2"}


def test_forward_batched_passes_model_kwargs_to_model() -> None:
    result = InferenceRunner.forward(
        [0, 1],
        dataset=[{"speech": 1.0}, {"speech": 2.0}],
        model=with_beam,
        input_key="speech",
        model_kwargs={"beam_size": 4},
    )
    assert result == {"result": "[1.0, 2.0]:4"}


def test_forward_batched_lets_the_models_own_error_through_as_current_espnet3_does() -> None:
    def failing_model(speech: Any) -> Any:
        raise ValueError("model broken")

    with pytest.raises(ValueError, match="model broken") as info:
        InferenceRunner.forward(
            [0], dataset=[{"speech": 1.0}], model=failing_model, input_key="speech"
        )
    assert info.value.__cause__ is None


def test_a_batch_out_of_memory_is_said_with_its_items_and_their_lengths() -> None:
    def hungry_model(speech: Any) -> Any:
        raise MemoryError

    dataset = [{"speech": [0.0] * 1600}, {"speech": [0.0] * 800}]
    with pytest.raises(RuntimeError, match="ran out of memory on 2 items") as info:
        InferenceRunner.forward([0, 1], dataset=dataset, model=hungry_model, input_key="speech")
    assert "input lengths [1600, 800]" in str(info.value)
    assert "lower batch_size" in str(info.value)
    assert isinstance(info.value.__cause__, MemoryError)


def test_a_checked_batch_checks_every_output() -> None:
    check = OutputCheck("utt_id", ["hyp"], [])

    def forward(idx: Any, **env: Any) -> Any:
        return [{"utt_id": str(i), "hyp": "h"} if i else {"hyp": "h"} for i in idx]

    with pytest.raises(ValueError, match="idx_key='utt_id'"):
        checked_forward(forward, check, [1, 0])


# ------------------------------------------------------------ ESPnet3's infer stage


def espnet3_config(corpus: Path, tmp_path: Path, **more: Any) -> Any:
    """An ESPnet3 inference config, as a recipe's ``inference.yaml`` reads; test sets in tmp."""
    from tests.asr.test_kaldi import kaldi_dir

    data, out = tmp_path / "data", tmp_path / "infer"
    kaldi_dir(corpus, data / "digits", [61, 87])
    kaldi_dir(corpus, data / "sentences", [0, 5, 23])
    config = {
        "inference_dir": str(out),
        "dataset": {
            "_target_": "tests.asr.espnet3_recipe.Organizer",
            "test": [
                {"name": "digits", "data_dir": str(data / "digits")},
                {"name": "sentences", "data_dir": str(data / "sentences")},
            ],
        },
        "model": {"_target_": "tests.asr.espnet3_recipe.SphinxModel"},
        "provider": {"_target_": "kit.asr.InferenceProvider", "params": {}},
        "runner": {"_target_": "kit.asr.InferenceRunner"},
        "input_key": "speech",
        "output_fn": "tests.asr.espnet3_recipe.output_fn",
        "idx_key": "utt_id",
        "parallel": {"env": "local", "n_workers": 2, "options": {"threads_per_worker": 1}},
    }
    config.update(more)
    return OmegaConf.create(config)


@pytest.fixture
def sphinx() -> None:
    pytest.importorskip("pocketsphinx")


def test_an_espnet3_inference_config_writes_hyp_and_ref_scp_per_test_set(
    corpus: Path, tmp_path: Path, sphinx: None
) -> None:
    from kit.asr.data import read_kaldi_dir

    config = espnet3_config(corpus, tmp_path)
    folders = infer(config)
    assert sorted(folders) == ["digits", "sentences"]
    for name, folder in folders.items():
        entries = read_kaldi_dir(tmp_path / "data" / name)
        refs = (folder / "ref.scp").read_text().splitlines()
        hyps = (folder / "hyp.scp").read_text().splitlines()
        assert refs == [f"{e['id']} {e['text']}" for e in entries]
        assert [line.split()[0] for line in hyps] == [e["id"] for e in entries]
        assert all(len(line.split()) > 1 for line in hyps)  # PocketSphinx heard something
    # The folder is a Kit run: scored again without decoding, gated like any other.
    assert main(["score", str(folders["digits"]), "--max-wer", "1.0"]) == 0
    assert (folders["digits"] / "metrics.json").is_file()


def test_a_list_output_is_refused_as_current_espnet3_does_and_a_dict_is_a_json_file(
    corpus: Path, tmp_path: Path, sphinx: None
) -> None:
    # Kit wrote a list as hyp0.scp, hyp1.scp; current ESPnet3 refuses it, and writes a
    # dict as <field>/<utt_id>.json with its path in the scp.
    config = espnet3_config(
        corpus,
        tmp_path,
        output_fn="tests.asr.espnet3_recipe.two_hypotheses",
        output_keys=["hyp"],
        batch_size=2,
        parallel=None,
    )
    with pytest.raises(kit.ConfigError) as refused:
        infer(config)
    assert "Top-level list outputs are not supported for 'hyp' (ESPnet3's words)" in str(
        refused.value
    )
    assert not list((tmp_path / "infer" / "sentences").glob("*.scp"))
    config["output_fn"] = "tests.asr.espnet3_recipe.scored_hypotheses"
    config["output_keys"] = ["nbest"]
    config["inference_dir"] = str(tmp_path / "again")  # another config: a folder of its own
    folder = infer(config)["sentences"]
    assert sorted(p.name for p in folder.glob("*.scp")) == ["nbest.scp"]
    for line in (folder / "nbest.scp").read_text().splitlines():
        uid, path = line.split(" ", 1)
        assert path == (folder / "nbest" / f"{uid}.json").as_posix()
        first, upper = json.loads(Path(path).read_text())
        assert first.upper() == upper


def test_a_field_folder_planted_as_a_link_is_not_written_through(tmp_path: Path) -> None:
    # The set's folder is a Kit run: a co-user who can write it plants `nbest` -> elsewhere.

    victim, folder = tmp_path / "victim", tmp_path / "set"
    victim.mkdir()
    folder.mkdir()
    (folder / "nbest").symlink_to(victim)
    with pytest.raises(UnsafeFileError):
        write_scps(folder, [{"utt_id": "u1", "nbest": {"a": 1.0}}], "utt_id", None)
    assert list(victim.iterdir()) == []


def test_an_id_that_holds_a_path_cannot_name_a_json_file(tmp_path: Path) -> None:
    outputs = [{"utt_id": "../escape", "nbest": {"a": 1.0}}]
    with pytest.raises(ValueError, match=r"'\.\./escape' cannot name a file of its own"):
        write_scps(tmp_path / "set", outputs, "utt_id", None)
    assert list(tmp_path.rglob("*")) == []


def test_a_malformed_output_fails_its_utterance_named_and_writes_no_scp(
    corpus: Path, tmp_path: Path, sphinx: None
) -> None:
    config = espnet3_config(corpus, tmp_path, output_fn="tests.asr.espnet3_recipe.without_id")
    with pytest.raises(kit.RunError) as info:
        infer(config)
    message = str(info.value)
    assert message.startswith("test set 'digits': 1 of 2 items failed: item 1: ValueError")
    assert "idx_key='utt_id'" in message
    assert not list((tmp_path / "infer" / "digits").glob("*.scp"))
    assert info.value.result.records[0]["utt_id"]  # the good utterance is kept


@pytest.mark.parametrize(
    ("change", "kind", "message"),
    [
        (
            {"dataset": {"test": [{"data_dir": "x"}]}},
            RuntimeError,
            r"dataset\.test\[0\]\.name: inference_config.dataset.test entries must define "
            r"non-empty `name` \(ESPnet3's words; failed at index 0\)",
        ),
        (
            {"dataset": {"test": [{"name": "a"}, {"name": "a"}]}},
            ValueError,
            r"dataset\.test\[1\]\.name: two test sets are named 'a'",
        ),
        (
            {"input_key": None},
            RuntimeError,
            r"input_key: inference_config.input_key must be set \(ESPnet3's words\)",
        ),
        ({"output_fn": "no_such_module.fn"}, ModuleNotFoundError, r"'no_such_module'"),
        (
            {"output_keys": []},
            RuntimeError,
            r"output_keys: output_keys must not be empty \(ESPnet3's words\)",
        ),
        (
            {"runner": {"_target_": "collections.OrderedDict"}},
            TypeError,
            r"runner\._target_: OrderedDict must provide inference runner attributes "
            r"\(ESPnet3's words\): it is not a subclass of kit.Runner",
        ),
    ],
)
def test_a_config_missing_what_espnet3_requires_is_named(
    tmp_path: Path, change: dict[str, Any], kind: type[Exception], message: str
) -> None:
    # ESPnet3's type (RuntimeError, TypeError) and Kit's (ConfigError) both catch it.
    config = {
        "inference_dir": str(tmp_path),
        "dataset": {"test": [{"name": "a"}]},
        "provider": {"_target_": "kit.asr.InferenceProvider"},
        "runner": {"_target_": "kit.asr.InferenceRunner"},
        "input_key": "speech",
    }
    config.update(change)
    with pytest.raises(kind, match=message) as info:
        infer(config)
    assert isinstance(info.value, kit.ConfigError) or kind is ModuleNotFoundError


def test_a_planted_scp_link_in_the_inference_dir_is_refused_not_written_through(
    corpus: Path, tmp_path: Path, sphinx: None
) -> None:
    # A co-user who can write inference_dir plants hyp.scp as a link to a file of ours.
    victim = tmp_path / "thesis.tex"
    victim.write_text("precious")
    folder = tmp_path / "infer" / "digits"
    folder.mkdir(parents=True)
    (folder / "hyp.scp").symlink_to(victim)
    config = espnet3_config(corpus, tmp_path)
    with pytest.raises(UnsafeFileError, match=r"digits/hyp.scp is a symbolic link; Kit writes"):
        infer(config)
    assert victim.read_text() == "precious"  # neither written through nor renamed over
    assert (folder / "hyp.scp").is_symlink()
    (folder / "hyp.scp").unlink()
    assert infer(config)["digits"] == folder
    assert len((folder / "hyp.scp").read_text().splitlines()) == 2


def test_outputs_with_nothing_to_write_are_refused_in_espnet3s_words(tmp_path: Path) -> None:
    with pytest.raises(kit.ConfigError, match=r"No inference results available \(ESPnet3"):
        write_scps(tmp_path, [None, None], "utt_id", None)  # type: ignore[list-item]
    with pytest.raises(kit.ConfigError, match=r"No output keys found in inference results"):
        write_scps(tmp_path, [{"utt_id": "u1"}, {"utt_id": "u2"}], "utt_id", None)
    assert list(tmp_path.glob("*.scp")) == []


class CurrentProvider(InferenceProvider):
    """A provider written for current ESPnet3: it takes ``inference_config=``."""

    def __init__(self, inference_config: Any = None, params: Any = None) -> None:
        super().__init__(inference_config=inference_config, params=params)


class OlderProvider(InferenceProvider):
    """A provider written for an older ESPnet3: it takes ``infer_config=``."""

    def __init__(self, infer_config: Any = None, params: Any = None) -> None:
        super().__init__(infer_config=infer_config, params=params)


def test_a_provider_of_either_espnet3_takes_its_config_by_its_own_name() -> None:
    from kit.asr.inference import _config_argument

    for provider, name in ((CurrentProvider, "inference_config"), (OlderProvider, "infer_config")):
        config = OmegaConf.create({"provider": {"_target_": f"{__name__}.{provider.__name__}"}})
        assert list(_config_argument(config)) == [name]
    with pytest.warns(DeprecationWarning, match="pass inference_config= .ESPnet3's current name"):
        OlderProvider(infer_config={"a": 1})
    assert InferenceProvider(inference_config={"a": 1}).config.a == 1
