"""Environment providers: build heavy objects once per process or per worker.

A provider turns a config into an *env*: a plain dict of objects (a model, a
dataset, a decoder) that a Runner's ``forward`` receives by keyword name. In
inline runs the env is built once on the driver (:meth:`build_env_local`); on a
Dask cluster the provider's setup function runs once in every worker process,
inside a worker plugin, and is rebuilt automatically on workers that join or
restart.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from kit._base.errors import ProviderSetupError as ProviderSetupError
from kit.config import ConfigError, config_hash
from kit.config._errors import error, import_class, missing

if TYPE_CHECKING:
    from kit.result import Index

Env = dict[str, Any]


class EnvironmentProvider(abc.ABC):
    """Build the per-process environment a Runner's ``forward`` needs.

    Subclasses implement :meth:`build_env_local` (the env for inline runs,
    built on the driver) and :meth:`make_worker_setup_fn` (a zero-argument
    function that builds the env inside each worker). ESPnet3's newer name
    ``build_worker_setup_fn`` is accepted in place of the latter.

    Keep the provider itself light: it is pickled and sent to the workers
    (for :meth:`teardown_env`); heavy objects belong in the env.

    Parameters
    ----------
    config
        The experiment config (a DictConfig, or a dict which becomes one); its
        hash names the env on the workers, so the same config reuses an env
        already built.

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> class Doubler(EnvironmentProvider):
    ...     def build_env_local(self):
    ...         return {"factor": self.config.factor}
    ...     def make_worker_setup_fn(self):
    ...         factor = self.config.factor
    ...         return lambda: {"factor": factor}
    >>> provider = Doubler(OmegaConf.create({"factor": 2}))
    >>> provider.build_env_local()
    {'factor': 2}
    >>> provider.worker_setup_fn()()
    {'factor': 2}
    """

    #: Sections of the config this provider reads, with their schemas (dataclasses
    #: with ``choices`` and ``min`` metadata, as Kit's own): the config editor checks
    #: them as you type, all at once (see :func:`kit.config.config_problems`), and a
    #: run checks them whole before the env is built (:meth:`check_config`).
    config_schemas: ClassVar[Mapping[str, type]] = {}

    #: Config keys (dotted paths, e.g. ``"decoder.engine"``) the env is built from.
    #: The env's name on the workers hashes only these, so runs whose configs differ
    #: elsewhere (a beam size ``forward`` reads from its ``config`` parameter) share
    #: one env; while the env is built, the provider's config holds only these keys,
    #: and reading another is a :class:`~kit.ConfigError` naming it. None:
    #: the whole config (every config its own env).
    env_keys: ClassVar[Sequence[str] | None] = None

    def __init__(self, config: DictConfig | Mapping[str, Any]) -> None:
        # A plain dict works too; it becomes a DictConfig, as configs are everywhere.
        self.config = config if isinstance(config, DictConfig) else OmegaConf.create(dict(config))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # ESPnet3 renamed make_worker_setup_fn to build_worker_setup_fn; a
        # subclass defining only the new name satisfies the abstract method.
        newer = cls.__dict__.get("build_worker_setup_fn")
        if newer is not None and "make_worker_setup_fn" not in cls.__dict__:
            cls.make_worker_setup_fn = newer  # type: ignore[method-assign]
            abstract = set(getattr(cls, "__abstractmethods__", ()))
            abstract.discard("make_worker_setup_fn")
            cls.__abstractmethods__ = frozenset(abstract)

    @abc.abstractmethod
    def build_env_local(self) -> Env:
        """Build the env once on the driver, for inline runs."""

    @abc.abstractmethod
    def make_worker_setup_fn(self) -> Callable[[], Env]:
        """Return a zero-argument function that builds the env on a worker."""

    def teardown_env(self, env: Env) -> None:
        """Release the env's resources; by default close what has ``close()``."""
        for value in env.values():
            close = getattr(value, "close", None)
            if callable(close):
                close()

    def item_count(self) -> int | None:
        """Return how many items the provider's data holds, read here; None: it cannot say.

        A config whose ``items`` gives no ``stop`` runs the whole set, this
        many items (:func:`kit.items_of`). It should read what names the
        items (a list of ids, a manifest), not the items themselves; by
        default None, and ``items.stop`` must be given.
        """
        return None

    def reuse_fingerprint(self) -> str:
        """Return what a reused forward output's env must equal: by default :meth:`env_name`.

        Override it to add what the env's name does not see: the digests of
        model files, the versions of the libraries the env uses. Read here,
        on the driver, once a run starts (docs/reuse.md).
        """
        return self.env_name()

    def item_fingerprints(self, indices: Sequence[Index]) -> list[str]:
        """Return a digest of each item's content, read here; by default ``""``: its index says it.

        Override it when an item's data can change under the same index
        (its audio's bytes and its reference text, for decoding): a changed
        item is then computed again, not reused (docs/reuse.md).
        """
        return [""] * len(indices)

    def worker_setup_fn(self) -> Callable[[], Env]:
        """Return the setup function, checked to be a zero-argument callable."""
        fn = self.make_worker_setup_fn()
        if not callable(fn):
            raise TypeError(
                f"{type(self).__qualname__}.make_worker_setup_fn() must return a function "
                f"that builds the env, got {type(fn).__name__}; return `setup`, not `setup()`"
            )
        try:
            inspect.signature(fn).bind()
        except TypeError:
            raise TypeError(
                f"{type(self).__qualname__}.make_worker_setup_fn() returned {fn!r}, which "
                "needs arguments; it must be callable with none"
            ) from None
        except ValueError:  # builtins without a signature: nothing to check
            pass
        return fn

    def env_name(self) -> str:
        """Name of this provider's env on the workers: class, config hash, code fingerprint.

        The fingerprint (:func:`~kit._base.fingerprint.code_fingerprint`) is
        of the class's code as it reaches the workers, the globals it reads
        and the versions of the libraries it names. On a shared cluster an
        env is reused by whoever asks for the same name: one class defined
        alike in two notebooks shares one env, a class named like another
        with other code never gets the other's env, and a cell run again
        with fixed code builds anew.

        Examples
        --------
        >>> from omegaconf import OmegaConf
        >>> class P(EnvironmentProvider):
        ...     def build_env_local(self): return {}
        ...     def make_worker_setup_fn(self): return dict
        >>> P(OmegaConf.create({"a": 1})).env_name()  # doctest: +ELLIPSIS
        'kit-env:kit.provider.P:23eef9c51146-...'
        """
        from kit._base.fingerprint import code_fingerprint

        fingerprint = code_fingerprint(type(self))[:FINGERPRINT_CHARS]
        return f"{env_name_prefix(type(self))}{config_hash(self.env_config())}-{fingerprint}"

    def check_config(self) -> None:
        """Check the sections in ``config_schemas``, whole: a typo fails before anything runs.

        Whole, not only the ``env_keys`` the build sees: a mistyped key beside
        them (``decoder.beamsize``) would otherwise be silently ignored.

        Examples
        --------
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Decoder:
        ...     beam_size: int = 5
        >>> class Decode(EnvironmentProvider):
        ...     config_schemas = {"decoder": Decoder}
        ...     def build_env_local(self): return {}
        ...     def make_worker_setup_fn(self): return dict
        >>> try:
        ...     Decode({"decoder": {"beamsize": 3}}).check_config()
        ... except ConfigError as exc:
        ...     print(str(exc).splitlines()[0])
        decoder.beamsize: unknown key 'beamsize' in section 'decoder'; did you mean 'beam_size'?
        """
        from kit.config._schema import check_section

        for name, schema in type(self).config_schemas.items():
            if name in self.config:
                check_section(self.config, name, schema)

    def env_config(self) -> DictConfig:
        """Return the part of the config the env is built from: ``env_keys`` (all without).

        Examples
        --------
        >>> class Decode(EnvironmentProvider):
        ...     env_keys = ("decoder.engine",)
        ...     def build_env_local(self): return {"engine": self.config.decoder.engine}
        ...     def make_worker_setup_fn(self): return dict
        >>> cfg = {"decoder": {"engine": "whisper", "beam_size": 5}}
        >>> print(OmegaConf.to_yaml(Decode(cfg).env_config()), end="")
        decoder:
          engine: whisper
        >>> Decode(cfg).env_name() == Decode({"decoder": {"engine": "whisper"}}).env_name()
        True
        """
        keys = type(self).env_keys
        if keys is None:
            return self.config
        if isinstance(keys, str):
            raise TypeError(
                f"{type(self).__qualname__}.env_keys must be a tuple of config keys, "
                f"got the string {keys!r}; write ({keys!r},)"
            )
        part = OmegaConf.create({})
        for key in keys:
            value = OmegaConf.select(self.config, key, default=_ABSENT)
            if value is _ABSENT:
                continue  # an optional key left out: the provider's default, in every run
            if OmegaConf.is_config(value):
                # Resolved: an interpolation may point outside the env keys.
                value = OmegaConf.to_container(value, resolve=True)
            OmegaConf.update(part, key, value, merge=False, force_add=True)
        OmegaConf.set_struct(part, True)  # reading another key raises, named: see reading_env
        return part

    def for_env(self) -> EnvironmentProvider:
        """Return this provider as its env is built: a copy whose config is :meth:`env_config`.

        Without ``env_keys``, the provider itself.
        """
        if type(self).env_keys is None:
            return self
        twin = copy.copy(self)
        twin.config = self.env_config()
        return twin


_ABSENT = object()
#: Hex digits of the code fingerprint in an env's name.
FINGERPRINT_CHARS = 12


@contextlib.contextmanager
def reading_env(provider: type[EnvironmentProvider]) -> Iterator[None]:
    """Make reading a key outside ``provider.env_keys`` while building the env a clear error.

    Examples
    --------
    >>> class Decode(EnvironmentProvider):
    ...     env_keys = ("decoder.engine",)
    ...     def build_env_local(self): return {"beam": self.config.decoder.beam_size}
    ...     def make_worker_setup_fn(self): return dict
    >>> built = Decode({"decoder": {"engine": "whisper", "beam_size": 5}}).for_env()
    >>> try:
    ...     with reading_env(Decode):
    ...         built.build_env_local()
    ... except ConfigError as exc:
    ...     print(str(exc).splitlines()[0])
    decoder.beam_size: Decode read a config key outside its env_keys while building its env
    """
    try:
        yield
    except (ConfigAttributeError, ConfigKeyError) as exc:
        keys = provider.env_keys
        if keys is None or not exc.full_key:
            raise
        raise outside_env_keys(provider.__qualname__, str(exc.full_key), keys) from None


def outside_env_keys(label: str, key: str, keys: Sequence[str]) -> ConfigError:
    """Return the error for provider ``label`` reading ``key`` while building its env."""
    return error(
        f"{label} read a config key outside its env_keys while building its env",
        full_key=key,
        expected=f"one of env_keys: {', '.join(keys) or '(none)'}",
        fix=f"if the env depends on it, add {key!r} to {label}.env_keys (each value then "
        "builds its own env); if not, read it where it is used: give forward a `config` "
        "parameter and read it there",
    )


def env_only_setup(setup: Callable[[], Env], provider: type[EnvironmentProvider]) -> Env:
    """Run a worker setup function under :func:`reading_env` (picklable with ``partial``)."""
    with reading_env(provider):
        return setup()


def env_name_prefix(cls: type) -> str:
    """Return the part of env names shared by every config of provider ``cls``."""
    return f"kit-env:{cls.__module__}.{cls.__qualname__}:"


def check_env(env: Any, provider: str, where: str) -> Env:
    """Return ``env`` if it is a dict with string keys, else raise TypeError."""
    if not isinstance(env, dict):
        raise TypeError(
            f"{provider}: {where} must return a dict of env entries (name -> object), "
            f"got {type(env).__name__}"
        )
    bad = [key for key in env if not isinstance(key, str)]
    if bad:
        raise TypeError(f"{provider}: {where} returned env keys that are not strings: {bad!r}")
    return env


def build_provider(cfg: DictConfig) -> EnvironmentProvider:
    """Return the provider ``cfg.provider._target_`` names, made from ``cfg``.

    Raises
    ------
    ConfigError
        Naming ``provider._target_``, when it is missing, cannot be imported
        or is no :class:`EnvironmentProvider`.
    """
    if "provider" not in cfg:
        raise missing("provider._target_", "`provider: {_target_: mypkg.MyProvider}`")
    provider_cls = import_class(cfg.provider._target_, "provider._target_", EnvironmentProvider)
    provider: EnvironmentProvider = provider_cls(cfg)
    return provider
