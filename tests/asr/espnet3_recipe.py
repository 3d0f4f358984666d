"""A small ESPnet3 recipe's own code, as an inference config's ``_target_``s name it.

A dataset class over a Kaldi data directory, a model class taking ESPnet3's
``device`` argument, an ``output_fn``, and provider/runner subclasses: what a
recipe's ``src/`` holds. Module-level, so Hydra finds them and workers import them.
"""

from __future__ import annotations

from typing import Any

from kit.asr import InferenceProvider, InferenceRunner, make_recognizer
from kit.asr.data import entry_pcm, read_kaldi_dir


class KaldiDataset:
    """Items ``{"utt_id", "speech", "text"}`` of a Kaldi data directory."""

    def __init__(self, data_dir: str) -> None:
        self.entries = read_kaldi_dir(data_dir)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, idx: int) -> dict[str, Any]:
        entry = self.entries[idx]
        return {"utt_id": entry["id"], "speech": entry_pcm(entry)[0], "text": entry["text"]}


class Organizer:
    """ESPnet3's DataOrganizer shape: ``test[name]`` is a dataset."""

    def __init__(self, test: list[dict[str, Any]]) -> None:
        self.test = {entry["name"]: KaldiDataset(entry["data_dir"]) for entry in test}


class SphinxModel:
    """PocketSphinx as an ESPnet3 model: ``model(speech=...)``, built for a device."""

    def __init__(self, device: str, mode: str = "lm") -> None:
        self.device = device
        self.recognizer = make_recognizer({"engine": "pocketsphinx", "mode": mode})

    def __call__(self, speech: Any, beam_size: int | None = None) -> Any:
        if isinstance(speech, list):  # a batch
            return self.recognizer.decode(speech)
        return self.recognizer.decode([speech])[0]


def output_fn(data: Any, model_output: Any, idx: Any) -> Any:
    """ESPnet3's output function: the id, the hypothesis and the reference."""
    if isinstance(idx, list):
        return [output_fn(d, o, i) for d, o, i in zip(data, model_output, idx, strict=True)]
    return {"utt_id": data["utt_id"], "hyp": model_output, "ref": data["text"]}


def two_hypotheses(data: Any, model_output: Any, idx: Any) -> Any:
    """Two hypotheses per utterance, as an n-best list."""
    if isinstance(idx, list):
        return [two_hypotheses(d, o, i) for d, o, i in zip(data, model_output, idx, strict=True)]
    return {"utt_id": data["utt_id"], "hyp": [model_output, model_output.upper()]}


def scored_hypotheses(data: Any, model_output: Any, idx: Any) -> Any:
    """Two hypotheses per utterance with their scores: a dict, written as JSON."""
    if isinstance(idx, list):
        return [scored_hypotheses(d, o, i) for d, o, i in zip(data, model_output, idx, strict=True)]
    return {"utt_id": data["utt_id"], "nbest": {model_output: -1.0, model_output.upper(): -2.0}}


def without_id(data: Any, model_output: Any, idx: Any) -> Any:
    """An output function with a bug: the id is left out for one utterance."""
    out = output_fn(data, model_output, idx)
    if idx == 1:
        del out["utt_id"]
    return out


class CountingProvider(InferenceProvider):
    """Counts its builds (in this process), as ESPnet3's own provider test does."""

    dataset_calls = 0
    model_calls = 0

    @staticmethod
    def build_dataset(config: Any) -> Any:
        CountingProvider.dataset_calls += 1
        return {"name": config.name, "call": CountingProvider.dataset_calls}

    @staticmethod
    def build_model(config: Any) -> Any:
        CountingProvider.model_calls += 1
        return {"name": config.name, "call": CountingProvider.model_calls}


class DummyRunner(InferenceRunner):
    """ESPnet3's test runner: every output has ``idx``, ``hyp`` and ``ref``."""

    @staticmethod
    def forward(idx: Any, dataset: Any = None, model: Any = None, **env: Any) -> Any:
        return {"idx": idx, "hyp": "h", "ref": "r"}


class ListedProvider(InferenceProvider):
    """A dataset given in the config itself, and no model: for runner tests."""

    @staticmethod
    def build_dataset(config: Any) -> Any:
        from omegaconf import OmegaConf

        return OmegaConf.to_container(config["items"]) if "items" in config else []

    @staticmethod
    def build_model(config: Any) -> Any:
        return None


class ReturnsWhatItIsGiven(InferenceRunner):
    """Returns the dataset's item as its output, whatever it is."""

    @staticmethod
    def forward(idx: Any, dataset: Any = None, model: Any = None, **env: Any) -> Any:
        return dataset[idx]
