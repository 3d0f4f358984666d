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
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from omegaconf import DictConfig, OmegaConf

from kit._errors import KitError
from kit.config import config_hash

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
    #: them as you type, all at once (see :func:`kit.config.config_problems`).
    config_schemas: ClassVar[Mapping[str, type]] = {}

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
        """Name of this provider's env on the workers: class and config hash.

        Examples
        --------
        >>> from omegaconf import OmegaConf
        >>> class P(EnvironmentProvider):
        ...     def build_env_local(self): return {}
        ...     def make_worker_setup_fn(self): return dict
        >>> P(OmegaConf.create({"a": 1})).env_name()
        'kit-env:kit.provider.P:23eef9c51146'
        """
        return f"{env_name_prefix(type(self))}{config_hash(self.config)}"


class ProviderSetupError(KitError, RuntimeError):
    """Building a provider's env on a worker failed (the message has the worker's traceback).

    Examples
    --------
    >>> issubclass(ProviderSetupError, RuntimeError)
    True
    """


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
