"""Load, override, resolve, diff, hash and save configs."""

from __future__ import annotations

import copy
import hashlib
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import (
    InterpolationResolutionError,
    MissingMandatoryValue,
    OmegaConfBaseException,
)

from kit._base.atomic import atomic_file
from kit.config._compose import Provenance, compose_file, leaf_keys, source_of
from kit.config._errors import error
from kit.config._overrides import apply_overrides, iter_lines, to_override_list
from kit.config._schema import check_sections

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | DictConfig


def load_config(source: ConfigSource, overrides: Iterable[str] = ()) -> DictConfig:
    """Load a config and apply Hydra-style overrides.

    Parameters
    ----------
    source
        A YAML file path, a dict, or a DictConfig (which is copied, never
        changed). A YAML file may start with a ``defaults:`` list of other
        YAML files (relative to it) to compose: later entries win and the
        file's own content comes last.
    overrides
        Hydra override strings applied in order: ``a.b=1`` changes an
        existing key, ``+a.c=2`` adds a new one, ``++a.c=2`` adds or
        changes, ``~a.b`` deletes. Values parse as in Hydra.

    Returns
    -------
    DictConfig
        The config, interpolations (``${...}``) and ``???`` values kept as
        they are; see :func:`resolve_config` to resolve them.

    Raises
    ------
    ConfigError
        On a missing file, a YAML syntax error (with file and line), a bad
        override, or an invalid value in a kit section (``parallel``,
        ``runner``).

    Examples
    --------
    >>> cfg = load_config({"model": {"hidden": 64}, "lr": "${model.hidden}"}, ["model.hidden=128"])
    >>> cfg.lr
    128
    >>> load_config({"a": 1}, ["+b=[1,2]", "~a"])
    {'b': [1, 2]}
    """
    provenance: Provenance = {}
    try:
        cfg = _load_source(source, provenance)
    except RecursionError:
        where = str(source) if isinstance(source, (str, os.PathLike)) else "the config"
        raise error(
            f"{where} nests too deep to read (lists or mappings hundreds of levels deep)",
            source=where if isinstance(source, (str, os.PathLike)) else None,
            fix="flatten it",
        ) from None
    apply_overrides(cfg, iter_lines(overrides), provenance)
    check_sections(cfg, lambda key: source_of(provenance, key))
    return cfg


def _load_source(source: ConfigSource, provenance: Provenance) -> DictConfig:
    if isinstance(source, DictConfig):
        return copy.deepcopy(source)
    if isinstance(source, Mapping):
        return OmegaConf.create(dict(source))
    if isinstance(source, (str, os.PathLike)):
        return compose_file(Path(source), provenance)
    raise TypeError(
        f"load_config takes a YAML path, a dict or a DictConfig, not {type(source).__name__}"
    )


def resolve_config(cfg: DictConfig) -> DictConfig:
    """Return a copy of ``cfg`` with every interpolation resolved.

    Raises
    ------
    ConfigError
        Listing every ``???`` value still missing at once, or naming an
        interpolation that cannot be resolved.

    Examples
    --------
    >>> resolve_config(load_config({"a": 2, "b": "${a}"}))
    {'a': 2, 'b': 2}
    >>> resolve_config(load_config({"a": "???", "b": {"c": "???"}}))
    Traceback (most recent call last):
    ...
    kit.ConfigError: 2 required values are missing (???): a, b.c
    ...
    """
    missing: list[str] = []
    for key in leaf_keys(cfg):
        try:
            OmegaConf.select(cfg, key, throw_on_missing=True)
        except MissingMandatoryValue:
            missing.append(key)
        except InterpolationResolutionError as exc:
            raise error(
                f"cannot resolve interpolation: {_first_line(exc)}",
                full_key=key,
                fix="point the ${...} at an existing key, or set a value",
            ) from None
        except OmegaConfBaseException as exc:
            raise error(f"cannot resolve: {_first_line(exc)}", full_key=key) from None
    if missing:
        plural = "s are" if len(missing) > 1 else " is"
        example = " ".join(f"{key}=..." for key in missing)
        missing_error = error(
            f"{len(missing)} required value{plural} missing (???): {', '.join(missing)}",
            fix=f"set them in the YAML file or as overrides, e.g. `{example}`",
        )
        missing_error.full_key = missing[0]  # the field an editor points at first
        raise missing_error
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    return OmegaConf.create(container)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0]


def to_overrides(base: ConfigSource, edited: ConfigSource) -> list[str]:
    """Return the override list that turns ``base`` into ``edited``.

    ``load_config(base, to_overrides(base, edited)) == edited`` holds for any
    change of values, added keys and deleted keys. Interpolations and ``???``
    are compared as written, not resolved.

    Examples
    --------
    >>> base = {"model": {"hidden": 64, "drop": 0.1}, "name": "a"}
    >>> edited = {"model": {"hidden": 128}, "name": "a", "seed": 3}
    >>> to_overrides(base, edited)
    ['~model.drop', 'model.hidden=128', '+seed=3']
    """
    return to_override_list(_as_config(base), _as_config(edited))


def _as_config(source: ConfigSource) -> DictConfig:
    if isinstance(source, DictConfig):
        return source
    return load_config(source)


def config_hash(cfg: ConfigSource) -> str:
    """Return a stable 12-character hash of the resolved content of ``cfg``.

    Key order does not change the hash; any value change does.

    Examples
    --------
    >>> config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    True
    >>> len(config_hash({"a": 1}))
    12
    """
    config = _as_config(source=cfg)
    try:
        # The fast path: one pass, no copy (hashing runs before every run).
        container = OmegaConf.to_container(config, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException:
        resolve_config(config)  # raises the ConfigError that says what is wrong
        raise
    return plain_hash(container)


def plain_hash(container: Any) -> str:
    """Return :func:`config_hash` of plain data (dicts, lists, scalars), read as it is.

    No loading, no parsing: for data already checked (a typed section's fields).

    Examples
    --------
    >>> plain_hash({"a": 1, "b": [2, 3]}) == config_hash({"b": [2, 3], "a": 1})
    True
    """
    return hashlib.sha256(_canonical(container).encode()).hexdigest()[:12]


#: Sections that say where a run is watched from, not what it computes: a run or
#: sweep resumes with them changed (tracking turned on afterwards, say).
WATCH_SECTIONS = ("tracking",)


def outcome_hash(cfg: ConfigSource) -> str:
    """Return :func:`config_hash` of ``cfg`` less the sections that do not change results.

    A stored run or sweep is resumed only under a config of the same outcome hash.

    Examples
    --------
    >>> outcome_hash({"a": 1, "tracking": {"mlflow": True}}) == outcome_hash({"a": 1})
    True
    >>> outcome_hash({"runner": {"resume": False}}) == outcome_hash({"runner": {}})
    True
    """
    config = _as_config(source=cfg)
    runner = config.get("runner")
    asks_resume = isinstance(runner, DictConfig) and "resume" in runner
    if not any(name in config for name in WATCH_SECTIONS) and not asks_resume:
        return config_hash(config)
    trimmed = copy.copy(config)
    for name in WATCH_SECTIONS:
        trimmed.pop(name, None)
    if asks_resume:
        # Whether to keep stored results is no part of what they are: a run made once
        # with runner.resume=false is resumed by the same config without it.
        trimmed.runner = copy.copy(trimmed.runner)
        trimmed.runner.pop("resume")
    return config_hash(trimmed)


def _canonical(value: Any) -> str:
    if isinstance(value, dict):
        items = sorted((_canonical(k), _canonical(v)) for k, v in value.items())
        return "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
    if isinstance(value, (list, tuple, ListConfig)):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if isinstance(value, float) and math.isnan(value):
        return "float:nan"
    return f"{type(value).__name__}:{value!r}"


def save_config(cfg: ConfigSource, path: str | os.PathLike[str]) -> Path:
    """Write ``cfg`` resolved, as YAML, atomically (temp file, then rename).

    Returns the path written; parent folders are created.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run" / "config.yaml"
    >>> print(save_config({"a": 1, "b": "${a}"}, out).read_text(), end="")
    a: 1
    b: 1

    Values read from the environment stay unresolved, so a secret is not
    written out (nor shown in a run's report):

    >>> import os
    >>> os.environ["KIT_DOC_TOKEN"] = "hunter2"
    >>> cfg = {"token": "${oc.env:KIT_DOC_TOKEN}", "header": "Bearer ${token}"}
    >>> print(save_config(cfg, out).read_text(), end="")
    token: ${oc.env:KIT_DOC_TOKEN}
    header: Bearer ${token}
    """
    config = _as_config(cfg)
    resolved = resolve_config(config)
    raw = OmegaConf.to_container(config, resolve=False)
    done = OmegaConf.to_container(resolved, resolve=True)
    secrets = {str(v) for v in _env_values(raw, done) if str(v)}
    target = Path(path)
    with atomic_file(target, named=True) as fh:
        fh.write(OmegaConf.to_yaml(OmegaConf.create(_hide_env(raw, done, secrets))))
    return target


def _env_values(raw: Any, done: Any) -> Iterator[Any]:
    """Yield the resolved values of the leaves whose raw value reads the environment."""
    if isinstance(raw, dict) and isinstance(done, dict):
        for key, value in raw.items():
            yield from _env_values(value, done.get(key))
    elif isinstance(raw, list) and isinstance(done, list):
        for value, resolved in zip(raw, done, strict=False):
            yield from _env_values(value, resolved)
    elif isinstance(raw, str) and "${oc.env:" in raw:
        yield done


def _hide_env(raw: Any, done: Any, secrets: set[str]) -> Any:
    """Return ``done`` with each value read from the environment (or holding one) unresolved.

    A token in ``${oc.env:HF_TOKEN}`` stays in the environment: the saved
    config, and the report that shows it, keep the interpolation.
    """
    if isinstance(raw, dict) and isinstance(done, dict):
        return {k: _hide_env(raw.get(k), v, secrets) for k, v in done.items()}
    if isinstance(raw, list) and isinstance(done, list):
        return [_hide_env(r, d, secrets) for r, d in zip(raw, done, strict=False)]
    if (
        isinstance(raw, str)
        and "${" in raw
        and ("${oc.env:" in raw or any(secret in str(done) for secret in secrets))
    ):
        return raw
    return done
