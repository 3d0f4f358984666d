"""Structured schemas for the sections of a config that Kit itself reads.

Only these sections are checked; everything else in a config belongs to the
user (their provider, model, data) and is left alone.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from kit.config._backends import BACKENDS, installed_backends
from kit.config._errors import ConfigError, closest, error

#: The built-in values of ``parallel.env``: where a run's items execute (packages may add
#: more, see :mod:`kit.config._backends`).
PARALLEL_ENVS = tuple(BACKENDS)


@dataclass
class SecurityConfig:
    """TLS files for a ``remote`` scheduler (``parallel.security``).

    Attributes
    ----------
    ca_file
        The certificate authority that signed the scheduler's and workers'
        certificates.
    cert_file, key_file
        This client's certificate and private key.
    require_encryption
        Refuse unencrypted connections.

    Examples
    --------
    >>> SecurityConfig(ca_file="ca.pem", cert_file="me.pem", key_file="me.key").require_encryption
    True
    """

    ca_file: str = MISSING
    cert_file: str = MISSING
    key_file: str = MISSING
    require_encryption: bool = True


@dataclass
class ParallelConfig:
    """Schema of the ``parallel`` section (the same shape ESPnet3 uses).

    Attributes
    ----------
    env
        Where items run: ``inline`` (this process, no Dask), ``local`` (a
        LocalCluster on this machine), ``remote`` (an existing scheduler at
        ``address``), ``gateway`` (a dask-gateway cluster; ``address`` is the
        gateway's) or a job queue (``slurm``, ``pbs``, ...).
    n_workers
        Number of worker processes (or job-queue jobs) to start.
    address
        Scheduler address for ``env: remote``, e.g. ``tcp://127.0.0.1:8786``.
    options
        Free mapping forwarded to the cluster class as keyword arguments.
    security
        TLS files for a remote scheduler (see :class:`SecurityConfig`).
    submit_command
        For job queues: the command that submits a job script, e.g.
        ``ssh login-node sbatch`` instead of ``sbatch``.
    submit_hook
        For job queues: import path (``package.module.function``) of a
        function that gets the submit command as a list of strings (the
        script path last) and returns the command to run.
    startup_timeout
        Seconds to wait for the first worker of a job-queue or remote
        cluster before giving up with an error.
    max_envs
        Envs of one provider kept at once (in each worker, or in this process
        inline): runs alternating between that many env configs (two engines,
        say) never rebuild one. Past it, the least recently used env no run
        holds goes first. On a cluster the scheduler decides for all its
        clients: an env another client's run holds is never torn down.
    env_idle_timeout
        Seconds an env may stay unused by any run before it is torn down
        (its memory given back); None keeps it for as long as the cluster
        or the session lives.

    Examples
    --------
    >>> ParallelConfig(env="local", n_workers=2).options
    {}
    """

    env: str = field(
        default="local", metadata={"choices": PARALLEL_ENVS, "installed": installed_backends}
    )
    n_workers: int = field(default=1, metadata={"min": 1})
    address: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    security: SecurityConfig | None = None
    submit_command: str | None = None
    submit_hook: str | None = None
    startup_timeout: float = field(default=300.0, metadata={"min": 1})
    max_envs: int = field(default=2, metadata={"min": 1})
    env_idle_timeout: float | None = field(default=3600.0, metadata={"min": 0})


@dataclass
class RunnerConfig:
    """Schema of the ``runner`` section: how a Runner cuts and retries work.

    Attributes
    ----------
    _target_
        Import path of the Runner class (used by ``kit run``), optional.
    batch_size
        Items handed to ``forward`` at once; None calls it per item.
    batch_by
        Name of a ``@staticmethod`` of the runner, ``size(idx, **env)``, that
        gives an item's size (e.g. ``duration``: an utterance's seconds). With
        ``max_batch``, ``forward`` gets batches of items of similar size (the
        largest at most twice the smallest) whose sizes add up to at most
        ``max_batch``; ``batch_size``, if set, also caps a batch's items.
    max_batch
        The budget of one batch with ``batch_by``, in that method's unit.
    cost_by
        Name of a ``@staticmethod`` of the runner, ``cost(idx, **env)``, that an
        item's time grows with (``duration``): ``kit check`` scales the
        sample's times by it over the whole set to forecast the run. Default:
        the runner class's ``cost_by``.
    chunk_size
        ``"auto"`` or a fixed number of items per scheduled chunk.
    resume
        Skip chunks already completed in ``output_dir``.
    on_error
        ``record`` failed items and go on, or ``raise`` at the first one.
    max_failures
        Stop once this many items have failed; None never stops early.
    retries
        How often an item that kills its worker is tried again, alone, before
        it is recorded as failed (the items of a lost chunk first run again
        one by one, alone, to find that item, so other items are not blamed).
    backups
        ``auto``: at the end of a run, when a worker idles while a chunk waits
        queued behind another, send one copy of that chunk, but only when its
        expected time is well above a round trip (a copy gains at most that
        time); the first copy back wins. ``off``: never; ``forward`` then runs
        once per item unless a worker is lost.
    record_format
        How ``output_dir`` stores records. ``data``: JSON lines, or Arrow files
        for records holding numpy values or bytes; nothing stored is executed
        when read, and a record of another kind fails as an item error.
        ``pickle``: any picklable record, in cloudpickle files Kit reads only
        when its ledger names them with an unchanged digest.
    setup_timeout
        Seconds the provider's setup (``build_env_local``, or the worker setup
        on every worker) may take before the run ends with a
        ``ProviderSetupError``; None waits as long as it takes. Either way a
        submitted run's ``cancel()`` ends it within a second, in setup too.
    max_slots
        Worker threads this run keeps busy at most. Runs sharing a cluster
        (a class, two notebooks) each get a fair share of its threads (equal
        by default); a run's ``max_slots`` caps its share, and what it leaves
        goes to the others. None: as many as its share.
    reuse
        For a runner that declares ``forward_keys``: take an item's forward
        output from a run beside this one (a sweep's other trials, runs into
        the same folder) whose forward code, ``forward_keys`` values, env and
        item content are the same, and only ``finish`` it (see
        docs/reuse.md). ``false``: run ``forward`` on every item.
    verify
        The share of reused items whose ``forward`` runs again all the same,
        drawn at random: a fresh output that differs fails its item with a
        ``ReuseMismatchError`` naming the field.

    Examples
    --------
    >>> RunnerConfig().chunk_size, RunnerConfig().on_error
    ('auto', 'record')
    """

    _target_: str | None = None
    batch_size: int | None = field(default=None, metadata={"min": 1})
    batch_by: str | None = None
    cost_by: str | None = None
    max_batch: float | None = field(default=None, metadata={"min": 0})
    chunk_size: Any = field(default="auto", metadata={"auto_or_min": 1})
    resume: bool = True
    on_error: str = field(default="record", metadata={"choices": ("record", "raise")})
    max_failures: int | None = field(default=None, metadata={"min": 1})
    retries: int = field(default=2, metadata={"min": 0})
    backups: str = field(default="auto", metadata={"choices": ("auto", "off")})
    record_format: str = field(default="data", metadata={"choices": ("data", "pickle")})
    setup_timeout: float | None = field(default=None, metadata={"min": 0})
    max_slots: int | None = field(default=None, metadata={"min": 1})
    reuse: bool = True
    verify: float = field(default=0.01, metadata={"min": 0, "max": 1})


@dataclass
class ItemsConfig:
    """Schema of the ``items`` section: which indices ``kit run`` processes.

    Either a range (``start``, ``stop``, ``step``) or a ``file`` with one
    index per line (ints stay ints; anything else is a string id).

    Examples
    --------
    >>> ItemsConfig(stop=10).step
    1
    """

    start: int = 0
    stop: int | None = None
    step: int = field(default=1, metadata={"min": 1})
    file: str | None = None


@dataclass
class TargetConfig:
    """Schema of the ``provider`` section: the provider class ``kit run`` builds.

    Examples
    --------
    >>> TargetConfig(_target_="mypkg.Provider")._target_
    'mypkg.Provider'
    """

    _target_: str = MISSING


@dataclass
class TrackingConfig:
    """Schema of the ``tracking`` section: the trackers a run is exported to, live.

    Attributes
    ----------
    tensorboard
        A folder for TensorBoard logs, or true for ``tensorboard`` beside the
        run's folder; null (the default) writes none.
    mlflow
        An MLflow tracking URI (``sqlite:///runs/mlflow.db``, a server's
        ``http://127.0.0.1:5000``), or true for ``mlflow.db`` beside the run's
        folder; null (the default) exports nothing to MLflow.
    experiment
        The MLflow experiment runs go in.
    records
        Also upload the stored records to MLflow as artifacts.

    Examples
    --------
    >>> TrackingConfig().mlflow is None
    True
    """

    tensorboard: Any = field(default=None, metadata={"path_or_flag": "a folder"})
    mlflow: Any = field(default=None, metadata={"path_or_flag": "a tracking URI"})
    experiment: str = "kit"
    records: bool = False


#: The kit-owned sections and their schemas.
@dataclass
class CheckConfig:
    """Schema of the ``check`` section: what ``kit check`` samples and compares.

    Attributes
    ----------
    items
        Items in the sample, spread over the whole set.
    seed
        Which items the sample takes.
    rtol
        Numbers of two runs of one item within this relative difference are
        the same; None: the runner's ``check_rtol`` (0: exactly).
    ignore
        Record fields (dotted paths) that may differ, e.g. ``[decode_seconds]``;
        None: the runner's ``check_ignore``.

    Examples
    --------
    >>> CheckConfig().items
    20
    """

    items: int = field(default=20, metadata={"min": 1})
    seed: int = 0
    rtol: float | None = field(default=None, metadata={"min": 0})
    ignore: list[str] | None = None


SECTIONS: Mapping[str, type] = {
    "parallel": ParallelConfig,
    "runner": RunnerConfig,
    "items": ItemsConfig,
    "provider": TargetConfig,
    "tracking": TrackingConfig,
    "check": CheckConfig,
}

Provenance = Callable[[str], str | None]


def _no_source(_: str) -> str | None:
    return None


def check_sections(cfg: DictConfig, source_of: Provenance = _no_source) -> None:
    """Validate every kit-owned section present in ``cfg``.

    Values still missing (``???``) or behind an interpolation that does not
    resolve yet are left for :func:`kit.config.resolve_config` to report.
    """
    for name, schema in SECTIONS.items():
        if name in cfg:
            check_section(cfg, name, schema, source_of)


def config_problems(
    cfg: DictConfig, schemas: Mapping[str, type] | None = None, limit: int = 50
) -> list[ConfigError]:
    """Return every problem of ``cfg``'s checked sections at once (none: an empty list).

    The sections are Kit's own and those in ``schemas`` (a provider's
    :attr:`~kit.EnvironmentProvider.config_schemas`, say). Where
    :func:`check_sections` stops at the first problem, this goes on past
    each one (the key in error set aside), so a form can show them all next
    to their fields before anything runs.

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"parallel": {"env": "locl", "n_workers": 0}})
    >>> [problem.full_key for problem in config_problems(cfg)]
    ['parallel.env', 'parallel.n_workers']
    """
    problems: list[ConfigError] = []
    container = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(container, dict)
    for name, schema in {**SECTIONS, **(schemas or {})}.items():
        if name not in container:
            continue
        section = OmegaConf.create({name: container[name]})
        while len(problems) < limit:
            try:
                check_section(section, name, schema)
                break
            except ConfigError as exc:
                problems.append(exc)
                key = exc.full_key
                if not key or key == name or OmegaConf.select(section, key, default=None) is None:
                    break  # nothing smaller to set aside: the section itself is wrong
                parent, _, leaf = key.rpartition(".")
                node = OmegaConf.select(section, parent)
                assert isinstance(node, DictConfig)
                del node[leaf]
    return problems


def check_section(
    cfg: DictConfig, name: str, schema: type, source_of: Provenance = _no_source
) -> DictConfig:
    """Validate section ``name`` of ``cfg`` against ``schema``; return it typed."""
    node = cfg._get_node(name)
    if OmegaConf.is_missing(cfg, name) or OmegaConf.is_interpolation(cfg, name):
        typed_default: DictConfig = OmegaConf.structured(schema)
        return typed_default
    section = cfg[name]
    if section is None:  # `tracking: null` in a file: the section's defaults
        defaults: DictConfig = OmegaConf.structured(schema)
        return defaults
    if not isinstance(section, DictConfig):
        raise error(
            f"must be a mapping, got {type(section).__name__}",
            full_key=name,
            source=source_of(name),
            value=section,
            show_value=True,
            expected=f"a mapping with keys {', '.join(_field_names(schema))}",
            fix=f"write `{name}:` followed by indented keys",
        )
    del node
    typed = OmegaConf.structured(schema)
    try:
        merged = OmegaConf.merge(typed, section)
    except ConfigKeyError as exc:
        raise _unknown_key(name, schema, exc, source_of) from None
    except ValidationError as exc:
        inner = getattr(exc, "full_key", None) or exc.key
        key = f"{name}.{inner}" if inner is not None else name
        expected = _expected_type(schema, str(exc.key))
        raise error(
            f"{exc.value!r} is not {expected}",
            full_key=key,
            source=source_of(key),
            expected=expected,
            fix=f"set `{key}` to {expected}",
        ) from None
    assert isinstance(merged, DictConfig)
    for f in dataclasses.fields(schema):
        _check_field(merged, name, f, source_of)
    return merged


def _field_names(schema: type) -> list[str]:
    return [f.name for f in dataclasses.fields(schema)]


def _expected_type(schema: type, key: str) -> str:
    for f in dataclasses.fields(schema):
        if f.name == key:
            return f"a value of type {f.type}"
    return "a valid value"


def _unknown_key(
    name: str, schema: type, exc: OmegaConfBaseException, source_of: Provenance
) -> ConfigError:
    bad = str(getattr(exc, "key", "") or "")
    inner = str(getattr(exc, "full_key", "") or bad)
    full_key = f"{name}.{inner}" if inner else name
    # Walk down nested schemas (parallel.security) to list the right keys.
    for part in inner.split(".")[:-1]:
        hints = typing.get_type_hints(schema)
        nested = [a for a in typing.get_args(hints.get(part)) if dataclasses.is_dataclass(a)]
        candidate = nested[0] if nested else hints.get(part)
        if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            schema, name = candidate, f"{name}.{part}"
    valid = _field_names(schema)
    guess = closest(bad, valid)
    problem = f"unknown key '{bad}' in section '{name}'"
    if guess:
        problem += f"; did you mean '{guess}'?"
    fix = f"rename it to `{name}.{guess}`" if guess else f"remove `{full_key}`"
    if name == "parallel" and "." not in inner:
        fix += " (cluster-specific settings go under `parallel.options`)"
    return error(
        problem,
        full_key=full_key,
        source=source_of(full_key),
        expected=f"one of the keys {', '.join(valid)}",
        fix=fix,
    )


def _check_field(
    merged: DictConfig, section: str, f: dataclasses.Field[Any], source_of: Provenance
) -> None:
    key = f"{section}.{f.name}"
    if OmegaConf.is_missing(merged, f.name) or OmegaConf.is_interpolation(merged, f.name):
        return
    value = merged[f.name]
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices and "installed" in f.metadata:
        # Names installed packages add: looked up only for a name not built in.
        choices = (*choices, *sorted(f.metadata["installed"]()))
    if choices is not None and value not in choices:
        guess = closest(str(value), choices)
        problem = f"'{value}' is not a valid choice"
        if guess:
            problem += f"; did you mean '{guess}'?"
        raise error(
            problem,
            full_key=key,
            source=source_of(key),
            expected=f"one of {', '.join(choices)}",
            fix=f"set it with `{key}={guess or choices[0]}`",
        )
    kind = "a number" if "float" in str(f.type) else "an integer"
    for bound, outside, said, sign, more in (
        ("min", operator.lt, "at least", ">=", "more"),
        ("max", operator.gt, "at most", "<=", "less"),
    ):
        limit = f.metadata.get(bound)
        if limit is not None and value is not None and outside(value, limit):
            raise error(
                f"must be {said} {limit}, got {value!r}",
                full_key=key,
                source=source_of(key),
                expected=f"{kind} {sign} {limit}",
                fix=f"set it with `{key}={limit}` or {more}",
            )
    what = f.metadata.get("path_or_flag")
    if what is not None and not (
        value is None or isinstance(value, bool) or (isinstance(value, str) and value.strip())
    ):
        raise error(
            f"must be true, false or {what}, got {value!r}",
            full_key=key,
            source=source_of(key),
            expected=f"true (the default place), false, or {what}",
            fix=f"set it with `{key}=true`",
        )
    auto_min = f.metadata.get("auto_or_min")
    if auto_min is not None and value != "auto":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= auto_min
        if not ok:
            raise error(
                f"must be 'auto' or an integer >= {auto_min}, got {value!r}",
                full_key=key,
                source=source_of(key),
                expected=f"'auto' or an integer >= {auto_min}",
                fix=f"set it with `{key}=auto`",
            )


def parallel_section(cfg: DictConfig | Mapping[str, Any] | None) -> ParallelConfig:
    """Return a ``parallel`` section as a validated :class:`ParallelConfig`.

    Accepts the section itself (a mapping with ``env`` etc.) or None, which
    means ``inline``.

    Examples
    --------
    >>> parallel_section({"env": "local", "n_workers": 2}).n_workers
    2
    >>> parallel_section(None).env
    'inline'
    """
    if cfg is None:
        return ParallelConfig(env="inline")
    section = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(dict(cfg))
    wrapped = OmegaConf.create({"parallel": OmegaConf.to_container(section)})
    typed = check_section(wrapped, "parallel", ParallelConfig)
    try:
        obj = OmegaConf.to_object(typed)
    except OmegaConfBaseException as exc:  # a ??? value still missing
        raise error(
            f"cannot be used yet: {str(exc).splitlines()[0]}",
            full_key=f"parallel.{exc.full_key}" if getattr(exc, "full_key", None) else "parallel",
            fix="fill in the missing values",
        ) from None
    assert isinstance(obj, ParallelConfig)
    limit = max_workers(obj.env)
    if obj.n_workers > limit:
        where = "this machine's cores" if obj.env == "local" else "one run"
        raise error(
            f"{obj.n_workers} workers is more than Kit starts for env {obj.env!r} "
            f"(at most {limit}, for {where})",
            full_key="parallel.n_workers",
            expected=f"an integer from 1 to {limit}",
            fix=f"set it with `parallel.n_workers={min(limit, 4)}`",
        )
    return obj


#: Worker processes per core a local cluster may have (I/O-bound work wants a few;
#: at least 32 in all, as the engine benchmark runs napping items on 32 workers).
LOCAL_WORKERS_PER_CORE = 8
#: Jobs (or remote workers to wait for) in one run.
MAX_JOBS = 10_000


def max_workers(env: str) -> int:
    """Return the largest ``parallel.n_workers`` Kit accepts for ``env``.

    Examples
    --------
    >>> max_workers("slurm")
    10000
    """
    if env == "local":
        return max(32, LOCAL_WORKERS_PER_CORE * (os.cpu_count() or 1))
    return MAX_JOBS
