"""ESPnet3's inference contract: an ``InferenceProvider``, an ``InferenceRunner``, ``infer``.

ESPnet3 runs inference through a provider that builds ``dataset`` and
``model`` from the config (:meth:`InferenceProvider.build_dataset`,
:meth:`InferenceProvider.build_model`) and a runner whose ``forward`` feeds
``dataset[idx][input_key]`` to the model and returns a dict per utterance: an
id under ``idx_key`` and the outputs (``hyp``, ``ref``, ...). Kit's versions
keep ESPnet3's names, arguments and error messages, and check every output
on the worker that made it, so a malformed one fails its item (named by
index) instead of the whole set. :func:`infer` runs an ESPnet3 inference
config, test set by test set, and writes ``<inference_dir>/<test>/<field>.scp``
(a dict value as ``<field>/<id>.json``, its path in the line; a list is
refused, as current ESPnet3 does); the folder is also a Kit run, so ``kit
score`` scores it again when the outputs carry ``ref``.
"""

from __future__ import annotations

import functools
import inspect
import json
import reprlib
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from kit._base.atomic import atomic_file
from kit._base.errors import ConfigError
from kit._base.files import refuse_links
from kit.config._errors import error, import_class
from kit.provider import Env, EnvironmentProvider
from kit.result import Index, RunError, RunResult
from kit.runner import Runner

Keys = str | Sequence[str]


class StageError(ConfigError, RuntimeError):
    """A config ESPnet3's inference stage refuses with a RuntimeError; either type catches it."""


class StageTypeError(ConfigError, TypeError):
    """A config ESPnet3's inference stage refuses with a TypeError; either type catches it."""


class InferenceProvider(EnvironmentProvider):
    """Build ESPnet3's inference env, ``{"dataset": ..., "model": ..., **params}``, once per worker.

    Override the static :meth:`build_dataset` and :meth:`build_model` (both
    take the config) in a module-level subclass; by default they instantiate
    the config's ``dataset`` and ``model`` with Hydra, as ESPnet3 does.

    Parameters
    ----------
    inference_config
        The inference config (current ESPnet3's name for it; its older
        ``infer_config=`` is taken too, with a ``DeprecationWarning``);
        ``params`` are merged into a copy of it, so a worker's build sees
        them too.
    params
        Extra env entries (``input_key``, ``output_fn_path``, a beam size...).
        The workers' setup function takes a copy when it is made: changing
        ``provider.params`` afterwards does not change what it builds.

    Examples
    --------
    >>> from kit.asr import InferenceProvider
    >>> class Words(InferenceProvider):
    ...     @staticmethod
    ...     def build_dataset(config):
    ...         return [{"speech": text} for text in config.texts]
    ...     @staticmethod
    ...     def build_model(config):
    ...         return str.upper
    >>> env = Words({"texts": ["yes", "no"]}, params={"input_key": "speech"}).build_env_local()
    >>> env["dataset"][1], env["model"]("no"), env["input_key"]
    ({'speech': 'no'}, 'NO', 'speech')
    """

    def __init__(
        self,
        inference_config: DictConfig | Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        *,
        infer_config: DictConfig | Mapping[str, Any] | None = None,
    ) -> None:
        if infer_config is not None:
            # ESPnet3's older spelling; current ESPnet3 passes inference_config=.
            warnings.warn(
                "InferenceProvider(infer_config=...) is deprecated: pass inference_config= "
                "(ESPnet3's current name)",
                DeprecationWarning,
                stacklevel=2,
            )
            if inference_config is not None:
                raise TypeError("give inference_config= or infer_config=, not both")
            inference_config = infer_config
        super().__init__(OmegaConf.create({}) if inference_config is None else inference_config)
        # A copy: the caller's config (ESPnet3 sets test_set on it per set) stays theirs.
        self.config = self.config.copy()
        self.params: dict[str, Any] = dict(params or {})
        if self.params:
            OmegaConf.set_struct(self.config, False)
            self.config.update(self.params)

    def build_env_local(self) -> Env:
        """Build the env on the driver, for inline runs (``build_dataset`` may use ``self``)."""
        config = self.config
        env: Env = {"dataset": self.build_dataset(config), "model": self.build_model(config)}
        env.update(self.params)
        return env

    def make_worker_setup_fn(self) -> Callable[[], Env]:
        """Return the workers' setup: a ``partial`` of the class, the config and the params."""
        return functools.partial(_build_env, type(self), self.config, dict(self.params))

    def build_worker_setup_fn(self) -> Callable[[], Env]:
        """Return the workers' setup: current ESPnet3's name for :meth:`make_worker_setup_fn`."""
        return self.make_worker_setup_fn()

    @staticmethod
    def build_dataset(config: DictConfig) -> Any:
        """Return the test set named ``config.test_set`` (indexable by integer, with ``len``).

        ``config.dataset`` either names an organizer with ``_target_`` whose
        ``test[name]`` is the set (ESPnet3's ``DataOrganizer``), or holds
        ``test: [{name: ..., dataset: {_target_: ...}}]`` and the named entry's
        ``dataset`` is instantiated.
        """
        from hydra.utils import instantiate

        if not isinstance(config, DictConfig):  # a plain dict, as ESPnet3 takes it too
            config = OmegaConf.create(config)
        name = OmegaConf.select(config, "test_set")
        if "_target_" in config.dataset:
            return instantiate(config.dataset).test[name]
        entries = config.dataset.test
        for entry in entries:
            if entry.get("name") == name:
                return instantiate(entry.dataset)
        names = ", ".join(str(entry.get("name")) for entry in entries)
        raise error(
            f"no test set named {name!r} in dataset.test",
            full_key="test_set",
            expected=f"one of: {names}",
        )

    @staticmethod
    def build_model(config: DictConfig) -> Any:
        """Instantiate ``config.model`` with Hydra, given the device (``cpu`` without CUDA)."""
        from hydra.utils import instantiate

        return instantiate(config.model, device=_device())


def _device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _build_env(cls: type[InferenceProvider], config: DictConfig, params: dict[str, Any]) -> Env:
    """Build ``{"dataset", "model", **params}`` with ``cls``'s static builders."""
    env: Env = {"dataset": cls.build_dataset(config), "model": cls.build_model(config)}
    env.update(params)
    return env


class InferenceRunner(Runner, replaces=("__call__",)):
    """Run inference and check each output: a dict with ``idx_key``, ``hyp_key`` and ``ref_key``.

    ``forward`` is ESPnet3's: ``dataset[idx]``'s ``input_key`` entries go to
    ``model`` (lists of them for a batch of indices), and ``output_fn`` (or
    the function at the dotted ``output_fn_path``) turns the model's output
    into the dict. Override it as a ``@staticmethod`` for anything else.
    Each output is checked on its worker: not a dict, a missing key, or a
    list where the id should be fails that item, with ESPnet3's message.

    Parameters
    ----------
    provider
        Usually an :class:`InferenceProvider`.
    idx_key
        The output key holding the utterance id (one value, not a list).
    hyp_key, ref_key
        The output key or keys that must be there.
    **kwargs
        As for :class:`kit.Runner` (``parallel``, ``batch_size``, ``output_dir``...).

    Examples
    --------
    >>> from kit.asr import InferenceProvider, InferenceRunner
    >>> class Echo(InferenceProvider):
    ...     @staticmethod
    ...     def build_dataset(config):
    ...         return [{"id": f"u{i}", "speech": t} for i, t in enumerate(config.texts)]
    ...     @staticmethod
    ...     def build_model(config):
    ...         return lambda speech: speech.upper()
    >>> class Decode(InferenceRunner):
    ...     @staticmethod
    ...     def forward(idx, dataset, model, **env):
    ...         item = dataset[idx]
    ...         return {"utt_id": item["id"], "hyp": model(item["speech"]), "ref": item["speech"]}
    >>> Decode(Echo({"texts": ["yes", "no"]}))(range(2))
    [{'utt_id': 'u0', 'hyp': 'YES', 'ref': 'yes'}, {'utt_id': 'u1', 'hyp': 'NO', 'ref': 'no'}]
    """

    def __init__(
        self,
        provider: EnvironmentProvider,
        idx_key: str = "utt_id",
        hyp_key: Keys = "hyp",
        ref_key: Keys = "ref",
        **kwargs: Any,
    ) -> None:
        super().__init__(provider, **kwargs)
        self.idx_key = idx_key
        self.hyp_key: str | list[str] = _keys_or_key(hyp_key)
        self.ref_key: str | list[str] = _keys_or_key(ref_key)

    @property
    def output_check(self) -> OutputCheck:
        """The check each output passes on its worker."""
        return OutputCheck(self.idx_key, _as_list(self.hyp_key), _as_list(self.ref_key))

    def resolve_idx_key(self, output: Mapping[str, Any]) -> str:
        """Return ``idx_key`` if ``output`` has it; else ESPnet3's ValueError naming it."""
        return self.output_check.resolve_idx_key(output)

    def _validate_output(self, output: Any) -> None:
        """Check one output (ESPnet3's name): a dict with the id, hyp and ref keys."""
        self.output_check(output)

    def task_forward(self) -> Callable[..., Any]:
        """Return ``forward`` wrapped so each output is checked where it is made."""
        return functools.partial(checked_forward, type(self).forward, self.output_check)

    @staticmethod
    def forward(idx: Any, dataset: Any = None, model: Any = None, **kwargs: Any) -> Any:
        """Feed ``dataset[idx]``'s ``input_key`` entries to ``model``; return its output dict(s).

        ``kwargs`` holds ``input_key`` (a key or a list of keys), and
        optionally ``output_fn`` or ``output_fn_path`` (called as
        ``output_fn(data=..., model_output=..., idx=...)``) and
        ``model_kwargs`` (more keyword arguments for the model). A list of
        indices is a batch: the model gets a list per key.
        """
        if "input_key" not in kwargs:
            raise RuntimeError("input_key must be provided for inference.")
        input_key = kwargs["input_key"]
        output_fn = kwargs.get("output_fn")
        if output_fn is None and kwargs.get("output_fn_path"):
            output_fn = load_output_fn(kwargs["output_fn_path"])
        model_kwargs = dict(kwargs.get("model_kwargs") or {})
        keys = _as_list(input_key)
        if not isinstance(idx, list | tuple):
            data = dataset[idx]
            inputs = {key: _input(data, key) for key in keys}
            model_output = model(**inputs, **model_kwargs)
            if output_fn is None:
                return model_output
            return output_fn(data=data, model_output=model_output, idx=idx)
        indices = list(idx)
        batch = [dataset[i] for i in indices]
        inputs = {key: [_input(data, key) for data in batch] for key in keys}
        try:
            model_output = model(**inputs, **model_kwargs)
        except Exception as exc:
            # As current ESPnet3: the model's own error goes up as it is, unless the batch
            # ran out of memory, which is said with the sizes that made it.
            if not _out_of_memory(exc):
                raise
            lengths = [_length(value) for value in inputs[keys[0]]]
            raise RuntimeError(
                f"Batched inference ran out of memory on {len(indices)} items (indices "
                f"{indices}, input lengths {lengths}): lower batch_size in the inference "
                "config, or sort the test set by length so that long utterances are not "
                "batched with short ones"
            ) from exc
        if output_fn is None:
            return model_output
        return output_fn(data=batch, model_output=model_output, idx=indices)

    def __call__(self, indices: int | Iterable[Index], **forward_kwargs: Any) -> list[Any]:  # type: ignore[override]
        """Run over ``indices`` and return the checked outputs, flattened (ESPnet3's way).

        Use :meth:`~kit.Runner.run` for Kit's :class:`~kit.RunResult`
        (records per index, failures, stats). Unlike ESPnet3, a failed item
        does not lose the others: the outputs
        done are in ``output_dir`` (a rerun resumes), and the
        :class:`~kit.RunError` raised names each failed index and why.
        """
        result = self.run(indices, **forward_kwargs)
        if result.errors:
            raise RunError(failed_items(result), result, result.errors[0])
        return flatten(result.records)


def failed_items(result: RunResult, limit: int = 5) -> str:
    """Say which items of ``result`` failed and why (the first ``limit``)."""
    shown = "; ".join(
        f"item {error.index}: {error.type.removeprefix('builtins.')}: {error.message}"
        for error in result.errors[:limit]
    )
    more = len(result.errors) - limit
    tail = f"; and {more} more" if more > 0 else ""
    return f"{len(result.errors)} of {len(result.records)} items failed: {shown}{tail}"


def flatten(records: Iterable[Any]) -> list[Any]:
    """Return the outputs of ``records``, a list returned for one item spread out."""
    flat: list[Any] = []
    for record in records:
        if isinstance(record, list):
            flat.extend(record)
        else:
            flat.append(record)
    return flat


class OutputCheck:
    """What one inference output must hold; picklable, so it runs on the workers.

    Examples
    --------
    >>> check = OutputCheck("utt_id", ["hyp"], ["ref"])
    >>> check({"utt_id": "u1", "hyp": "yes", "ref": "yes", "score": -1.5})
    >>> try:
    ...     check({"utt_id": "u1", "hyp": "yes"})
    ... except ValueError as exc:
    ...     print(exc)
    Inference output keys must include all required keys. missing=['ref']
    """

    def __init__(self, idx_key: str, hyp_keys: list[str], ref_keys: list[str]) -> None:
        self.idx_key = idx_key
        self.hyp_keys = hyp_keys
        self.ref_keys = ref_keys

    def resolve_idx_key(self, output: Mapping[str, Any]) -> str:
        """Return the id key if ``output`` has it, else raise ValueError naming it."""
        if self.idx_key not in output:
            raise ValueError(
                "Inference output must include the configured sample identifier "
                "key used to map SCP results back to dataset samples. "
                f"idx_key={self.idx_key!r}"
            )
        return self.idx_key

    def __call__(self, output: Any) -> None:
        """Raise ESPnet3's TypeError or ValueError if ``output`` is not a valid output."""
        if not isinstance(output, dict):
            # reprlib: an array returned by mistake is named, not printed whole.
            raise TypeError(
                f"Expected dict output, got {type(output).__name__}: {reprlib.repr(output)}"
            )
        idx_key = self.resolve_idx_key(output)
        missing = {idx_key, *self.hyp_keys, *self.ref_keys} - set(output)
        if missing:
            raise ValueError(
                f"Inference output keys must include all required keys. missing={sorted(missing)}"
            )
        if isinstance(output[idx_key], list | tuple):
            raise TypeError(
                f"'{idx_key}' must be a single value, not {type(output[idx_key]).__name__}"
            )


def checked_forward(
    forward: Callable[..., Any], check: OutputCheck, idx: Any, **kwargs: Any
) -> Any:
    """Call ``forward(idx, **kwargs)`` and check its output(s) before returning them."""
    output = forward(idx, **kwargs)
    # A batch returns one output per index; one index may return a list of outputs too.
    for item in flatten(output if isinstance(output, list) else [output]):
        check(item)
    return output


@functools.cache
def load_output_fn(path: str) -> Callable[..., Any]:
    """Import the function at the dotted ``path`` (``package.module.function``)."""
    module_path, _, name = path.rpartition(".")
    if not module_path:
        raise ValueError(f"output_fn_path must be a dotted path, package.module.function: {path!r}")
    return getattr(import_module(module_path), name)  # type: ignore[no-any-return]


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` says memory ran out (torch's error is looked for only if torch is loaded)."""
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    return isinstance(exc, MemoryError) or (oom is not None and isinstance(exc, oom))


def _length(value: Any) -> int | None:
    """Return an input's length (an array's first dimension), or None if it has none."""
    shape = getattr(value, "shape", None)
    if shape:
        return int(shape[0])
    try:
        return len(value)
    except TypeError:
        return None


def _input(data: Any, key: str) -> Any:
    if key not in data:
        raise KeyError(f"Input key '{key}' not found in dataset item.")
    return data[key]


def _as_list(keys: Keys) -> list[str]:
    return [keys] if isinstance(keys, str) else list(keys)


def _keys_or_key(keys: Keys) -> str | list[str]:
    return keys if isinstance(keys, str) else [str(key) for key in keys]


# ------------------------------------------------------------------ the stage


def _checked_stage(config: DictConfig) -> list[str] | None:
    """Check what ESPnet3's inference stage requires of ``config``; return its output keys.

    Said in ESPnet3's words, before the provider and its dataset are built.
    """
    for key in ("inference_dir", "input_key", "provider", "runner"):
        if OmegaConf.select(config, key) is None:
            raise error(
                f"inference_config.{key} must be set (ESPnet3's words)",
                full_key=key,
                fix=f"add {key}: to the inference config",
                kind=StageError,
            )
    output_keys = config.get("output_keys")
    if isinstance(output_keys, str):
        output_keys = [output_keys]
    if output_keys is not None and len(output_keys) == 0:
        raise error(
            "output_keys must not be empty (ESPnet3's words)",
            full_key="output_keys",
            fix="name the output fields to write, or leave output_keys out to write every field",
            kind=StageError,
        )
    # ESPnet3: the runner "must provide inference runner attributes"; checked before the
    # provider and its dataset are built, not by an AttributeError after.
    runner_target = OmegaConf.select(config, "runner._target_")
    if runner_target is not None:
        runner_class = import_class(str(runner_target), "runner._target_", object)
        if not issubclass(runner_class, Runner):
            raise error(
                f"{runner_class.__name__} must provide inference runner attributes "
                "(ESPnet3's words): it is not a subclass of kit.Runner",
                full_key="runner._target_",
                fix="subclass kit.asr.InferenceRunner (or kit.Runner)",
                kind=StageTypeError,
            )
    return None if output_keys is None else list(output_keys)


def infer(config: DictConfig | Mapping[str, Any], *, client: Any = None) -> dict[str, Path]:
    """Run an ESPnet3 inference config: every test set, one ``<field>.scp`` per output field.

    The config is ESPnet3's: ``dataset.test`` (a list of named sets),
    ``provider`` and ``runner`` (``_target_`` classes, e.g. subclasses of
    :class:`InferenceProvider` and :class:`InferenceRunner`, with
    ``provider.params``), ``input_key``, and optionally ``output_fn``,
    ``output_keys``, ``idx_key`` (``utt_id``), ``batch_size``, ``parallel``.
    Each set runs as a Kit run in ``<inference_dir>/<name>/`` (a rerun
    resumes it) and, once every item is done, gets one ``<field>.scp`` per
    output field (``utt_id value`` lines in dataset order; a dict value is
    written to ``<field>/<utt_id>.json`` and its path is the line's value; a
    list value is refused with ESPnet3's words).

    Parameters
    ----------
    config
        The inference config (a DictConfig or a dict); it is copied, never changed.
    client
        A Dask client of your own to run every set on (``parallel`` is then
        ignored), as :class:`kit.Runner` takes it; Kit never closes it.

    Returns
    -------
    dict
        Each test set's name and folder.

    Raises
    ------
    kit.ConfigError
        A set without a name, two of one name, or a key ESPnet3 requires missing.
    kit.RunError
        Items failed; nothing is written for that set, the rest is kept.

    Examples
    --------
    >>> from kit.asr import infer
    >>> try:
    ...     infer({"inference_dir": "out", "dataset": {"test": [{"dataset": {}}]}})
    ... except Exception as exc:
    ...     print(str(exc).splitlines()[0].split(": ", 1)[1])
    inference_config.dataset.test entries must define non-empty `name` (ESPnet3's words; ...
    """
    from hydra.utils import instantiate

    config = config.copy() if isinstance(config, DictConfig) else OmegaConf.create(dict(config))
    OmegaConf.set_struct(config, False)
    names = set_names(config)
    output_keys = _checked_stage(config)
    idx_key = str(config.get("idx_key", "utt_id"))
    given = config.provider.get("params")
    params = OmegaConf.to_container(given, resolve=True) if given is not None else {}
    assert isinstance(params, dict)
    params.update(
        input_key=OmegaConf.to_object(config.input_key)
        if OmegaConf.is_config(config.input_key)
        else config.input_key,
        idx_key=idx_key,
        output_keys=output_keys,
    )
    if config.get("output_fn"):
        load_output_fn(str(config.output_fn))  # a typo fails now, not on every worker
        params["output_fn_path"] = str(config.output_fn)
    folders: dict[str, Path] = {}
    for name in names:
        config.test_set = name
        folder = Path(str(config.inference_dir)).expanduser() / name
        provider = instantiate(
            config.provider, **_config_argument(config), params=params, _recursive_=False
        )
        runner = instantiate(
            config.runner,
            provider=provider,
            idx_key=idx_key,
            hyp_key=list(output_keys) if output_keys is not None else [],
            ref_key=[],
            batch_size=config.get("batch_size"),
            output_dir=folder,
            parallel=config.get("parallel"),
            client=client,
            _recursive_=False,
        )
        size = len(provider.build_dataset(provider.config))
        if size == 0:
            raise error(
                f"Test dataset {name!r} is empty (ESPnet3's words)",
                full_key="dataset.test",
                fix="check the set's manifest and what its dataset class reads",
                kind=StageError,
            )
        result = runner.run(range(size))
        if result.errors:
            raise RunError(f"test set {name!r}: {failed_items(result)}", result, result.errors[0])
        write_scps(folder, flatten(result.records), idx_key, output_keys)
        folders[name] = folder
    return folders


def set_names(config: DictConfig) -> list[str]:
    """Return the names of ``config.dataset.test``: each set's, present and unique."""
    sets = OmegaConf.select(config, "dataset.test")
    if not isinstance(sets, ListConfig) or len(sets) == 0:
        raise error(
            "the inference config has no test sets",
            full_key="dataset.test",
            expected="a list of {name: ..., dataset: ...}",
        )
    names: list[str] = []
    for position, entry in enumerate(sets):
        name = entry.get("name") if isinstance(entry, DictConfig) else None
        if not isinstance(name, str) or not name:
            raise error(
                "inference_config.dataset.test entries must define non-empty `name` "
                f"(ESPnet3's words; failed at index {position})",
                full_key=f"dataset.test[{position}].name",
                kind=StageError,
            )
        if name in names:
            raise error(
                f"two test sets are named {name!r}",
                full_key=f"dataset.test[{position}].name",
                fix="give each set its own name: it names the set's output folder",
            )
        names.append(name)
    return names


def _config_argument(config: DictConfig) -> dict[str, Any]:
    """Return the keyword the inference config goes to the provider by.

    ``inference_config=`` as current ESPnet3 passes it; ``infer_config=``,
    its older name, only to a provider whose ``__init__`` has that name and
    not the new one (a provider written for an older ESPnet3).
    """
    target = OmegaConf.select(config, "provider._target_")
    try:
        from hydra.utils import get_class

        names = inspect.signature(get_class(str(target))).parameters
    except Exception:  # not importable here, or no signature: the current name
        return {"inference_config": config}
    if "inference_config" not in names and "infer_config" in names:
        return {"infer_config": config}
    return {"inference_config": config}


def write_scps(
    folder: Path, outputs: list[dict[str, Any]], idx_key: str, output_keys: Sequence[str] | None
) -> list[Path]:
    """Write one ``<field>.scp`` per output field in ``folder``; return the files.

    As current ESPnet3 writes them: a plain value (text, a number) is the
    line's value; a dict is written as JSON to ``<field>/<id>.json`` and
    its path is the value; a list or tuple is refused (one value per field).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> outputs = [{"utt_id": "u1", "hyp": "yes", "nbest": {"yes": -1.5, "yeah": -2.0}}]
    >>> [p.name for p in write_scps(folder, outputs, "utt_id", None)]
    ['hyp.scp', 'nbest.scp']
    >>> print((folder / "nbest.scp").read_text().replace(str(folder), "DIR"), end="")
    u1 DIR/nbest/u1.json
    >>> (folder / "nbest" / "u1.json").read_text()
    '{"yes": -1.5, "yeah": -2.0}'
    """
    if not [output for output in outputs if output]:
        raise error(
            "No inference results available (ESPnet3's words): forward gave nothing for any "
            f"item, so {folder} gets no .scp",
            full_key="runner",
            fix="return a dict with the id and at least one output field from forward",
            kind=StageError,
        )
    columns: dict[str, list[str]] = {}
    files: dict[Path, Any] = {}
    for position, output in enumerate(outputs):
        uid = str(output[idx_key])
        if not uid or len(uid.split()) != 1:
            raise ValueError(
                f"output {position}: the id {uid!r} is not one word; an scp line is "
                "`<id> <value>`, so an id must have no spaces"
            )
        fields = output_keys if output_keys is not None else [k for k in output if k != idx_key]
        for field in fields:
            value = output[field]
            if isinstance(value, list | tuple):
                raise error(
                    f"output {position} ({uid}): Top-level list outputs are not supported for "
                    f"{field!r} (ESPnet3's words)",
                    full_key="output_keys",
                    fix="return a single value per field, or wrap structured content in a dict "
                    "so it can be saved as JSON (to <field>/<id>.json)",
                    kind=StageTypeError,
                )
            if isinstance(value, dict):
                path = folder / _file_name(field, position) / f"{_file_name(uid, position)}.json"
                files[path] = value
                value = path.as_posix()
            columns.setdefault(field, []).append(f"{uid} {_cell(value, uid, field)}\n")
    if not columns:
        raise error(
            f"No output keys found in inference results (ESPnet3's words): the outputs hold "
            f"only {idx_key!r}, so {folder} gets no .scp",
            full_key="runner",
            fix="return the output fields beside the id from forward",
            kind=StageError,
        )
    for path, value in files.items():
        # The set's folder is a Kit run others may write: a field's folder planted as a
        # link would have these files written wherever it points.
        refuse_links(folder, (path.parent.name,))
        path.parent.mkdir(exist_ok=True)
        with atomic_file(path, "w") as fh:
            json.dump(value, fh)
    written = []
    for name in sorted(columns):
        path = folder / f"{name}.scp"
        with atomic_file(path, "w") as fh:
            fh.writelines(columns[name])
        written.append(path)
    return written


def _file_name(name: str, position: int) -> str:
    """Return ``name`` if it can name a file in its folder (no path of its own)."""
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(
            f"output {position}: {name!r} cannot name a file of its own (it holds a path), "
            "so its dict output has nowhere to go: give ids and fields without '/'"
        )
    return name


def _cell(value: Any, uid: str, field: str) -> str:
    text = str(value)
    if "\n" in text or "\r" in text:
        raise ValueError(
            f"{uid}: the {field!r} output has a line break; an scp file has one line per "
            "utterance: join the lines, or return a dict (written as <field>/<id>.json)"
        )
    return text
