"""What a process sees when it runs items: package versions, the resolved config, threads."""

from __future__ import annotations

import os
import platform
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kit._base.differences import leaves

#: Environment variables that change how numerical libraries and text handling behave.
ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "PYTHONHASHSEED",
    "LANG",
    "LC_ALL",
    "TZ",
)


@dataclass(frozen=True)
class Sight:
    """What one process (the driver, or a worker) sees.

    Attributes
    ----------
    where
        ``driver`` or the worker's address.
    versions
        Version of each installed distribution whose modules the process
        has imported (the runner's, the provider's and theirs).
    config
        The provider's config resolved there (``${oc.env:...}`` and other
        resolvers run where the env is built), leaf by leaf as text; or the
        error resolving it raised.
    threads
        The threads items run with there (a worker's ``nthreads``; the
        driver's cores, or ``KIT_WORKER_THREADS`` when set).
    environment
        Everything else compared: Python, the platform, the working folder and
        the variables of :data:`ENV_VARS`.
    """

    where: str
    versions: dict[str, str] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    threads: int = 1
    environment: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return it as plain data."""
        return {
            "where": self.where,
            "versions": self.versions,
            "config": self.config,
            "threads": self.threads,
            "environment": self.environment,
        }


def _modules_of(value: Any) -> set[str]:
    """Return the modules ``value`` comes from: its own if a module, its type's, its code's."""
    if isinstance(value, types.ModuleType):
        return {value.__name__}
    found = {getattr(value, "__module__", None), type(value).__module__}
    return {name for name in found if isinstance(name, str)}


def used_packages(task: Any, provider: Any, env: Mapping[str, Any]) -> set[str]:
    """Return the top-level packages a run uses: its runner's code's, its provider's, its env's.

    The modules of the runner's class and ``forward``, of the provider's
    class, and of every env value (and of the values it holds), with the
    packages those modules import: what a difference in versions can come
    from. Others a process happens to have imported are not.

    Examples
    --------
    >>> import json
    >>> from omegaconf import OmegaConf
    >>> class Holder:
    ...     def __init__(self):
    ...         self.settings = OmegaConf.create({"beam": 5})
    >>> used = used_packages(None, None, {"model": Holder(), "lib": json})
    >>> "json" in used, "omegaconf" in used
    (True, True)
    """
    modules: set[str] = set()
    declared = getattr(task, "declared_by", None)  # a kit.task.Task's runner class
    code = [declared, getattr(declared, "forward", None), provider]
    for value in code:
        modules |= _modules_of(value)
    for value in env.values():
        modules |= _modules_of(value)
        held = getattr(value, "__dict__", None)
        if isinstance(held, dict) and not isinstance(value, types.ModuleType):
            for inner in list(held.values())[:100]:
                modules |= _modules_of(inner)
    for name in list(modules):
        module = sys.modules.get(name)
        for imported in list(vars(module).values()) if module is not None else []:
            if isinstance(imported, types.ModuleType) or callable(imported):
                modules |= _modules_of(imported)
    return {name.partition(".")[0] for name in modules if name and name != "__main__"}


def loaded_versions(packages: set[str] | None = None) -> dict[str, str]:
    """Return ``{distribution: version}`` of the packages ``packages`` (default: all imported).

    Each top-level package is mapped to the distribution that installs it,
    and that one's version as this process would import it (``""`` for one
    not installed); packages no distribution installs are left out.

    Examples
    --------
    >>> "omegaconf" in loaded_versions({"omegaconf", "no_such_package"})
    True
    """
    from importlib import metadata

    if packages is None:
        packages = {name.partition(".")[0] for name in list(sys.modules)}
    owners = metadata.packages_distributions()
    names = {dist for top in packages if not top.startswith("_") for dist in owners.get(top, ())}
    found = {}
    for name in sorted(names):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = ""
    return found


def resolved_config(config: Any) -> dict[str, str]:
    """Return the config resolved here, leaf by leaf as text (``{"": error}`` if it cannot be).

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> resolved_config(OmegaConf.create({"a": {"b": 1}, "c": "${a.b}"}))
    {'a.b': '1', 'c': '1'}
    """
    if config is None:
        return {}
    from omegaconf import OmegaConf

    try:
        plain = OmegaConf.to_container(config, resolve=True)
    except Exception as exc:  # a resolver that fails here is what this finds out
        return {"": f"cannot be resolved: {type(exc).__name__}: {exc}"}
    return {path: value if isinstance(value, str) else repr(value) for path, value in leaves(plain)}


def driver_threads() -> int:
    """Threads items run with in this process, inline: ``KIT_WORKER_THREADS`` or the cores."""
    said = os.environ.get("KIT_WORKER_THREADS", "")
    return int(said) if said.isdigit() and int(said) > 0 else os.cpu_count() or 1


def environment() -> dict[str, str]:
    """Return what else of this process is compared: Python, the platform, the folder, variables.

    Examples
    --------
    >>> sorted(environment())[:3]
    ['CUDA_VISIBLE_DEVICES', 'LANG', 'LC_ALL']
    """
    return {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "cwd": os.getcwd(),
        **{name: os.environ.get(name, "") for name in ENV_VARS},
    }


def see(
    config: Any,
    packages: set[str] | None = None,
    threads: int | None = None,
    where: str = "driver",
) -> Sight:
    """Return what this process sees (run on a worker by ``Client.run``, or on the driver)."""
    return Sight(
        where=where,
        versions=loaded_versions(packages),
        config=resolved_config(config),
        threads=threads if threads is not None else driver_threads(),
        environment=environment(),
    )


def worker_sight(
    config: Any, packages: set[str] | None = None, dask_worker: Any = None
) -> dict[str, Any]:
    """Return what a worker sees as plain data, for ``Client.run`` (it passes ``dask_worker``)."""
    threads = int(dask_worker.state.nthreads) if dask_worker is not None else None
    where = str(dask_worker.address) if dask_worker is not None else "worker"
    return see(config, packages, threads, where).to_dict()


def versus(driver: Sight, worker: Sight) -> dict[str, list[str]]:
    """Return what differs between the driver's and a worker's sight, by cause.

    Both should hold the versions of the same packages (the runner's:
    :func:`used_packages`).

    Examples
    --------
    >>> a = Sight("driver", {"numpy": "2.1"}, {"x": "1"}, 2, {"python": "3.11"})
    >>> b = Sight("w", {"numpy": "2.2"}, {"x": "2"}, 1, {"python": "3.11"})
    >>> versus(a, b)["versions"], versus(a, b)["config"], versus(a, b)["threads"]
    (['numpy 2.1 (driver) vs 2.2 (w)'], ["x: '1' (driver) vs '2' (w)"], ['2 (driver) vs 1 (w)'])
    """
    versions = [
        f"{name} {driver.versions.get(name) or 'not installed'} (driver) vs "
        f"{version or 'not installed'} ({worker.where})"
        for name, version in sorted(worker.versions.items())
        # One the driver lacks, the reference did not run with: it is not the cause.
        if driver.versions.get(name) and driver.versions[name] != version
    ]
    config = [
        f"{key}: {driver.config.get(key, '(missing)')!r} (driver) vs "
        f"{worker.config.get(key, '(missing)')!r} ({worker.where})"
        for key in sorted(set(driver.config) | set(worker.config))
        if driver.config.get(key) != worker.config.get(key)
    ]
    threads = (
        [f"{driver.threads} (driver) vs {worker.threads} ({worker.where})"]
        if driver.threads != worker.threads
        else []
    )
    environment = [
        f"{key}: {driver.environment.get(key)!r} (driver) vs "
        f"{worker.environment.get(key)!r} ({worker.where})"
        for key in sorted(set(driver.environment) | set(worker.environment))
        if driver.environment.get(key) != worker.environment.get(key)
    ]
    return {"versions": versions, "config": config, "threads": threads, "environment": environment}
