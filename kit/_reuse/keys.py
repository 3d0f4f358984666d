"""What a stored forward output must match to be reused: forward's code and config, the env.

A runner that declares ``forward_keys`` says its ``forward`` reads only
those config keys; everything else of the config (the scoring, the
normaliser, ``summarize``) is applied after, by ``finish``. Two runs
whose forwards are alike in code, in those keys and in the env they are
given make the same forward output for the same item, so the second
takes the first's. The item's part of the match (its content) is the
provider's: :meth:`kit.EnvironmentProvider.item_fingerprints`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from kit.config._errors import closest, error

if TYPE_CHECKING:
    from kit.task import Task


def config_slice(config: DictConfig | None, keys: Sequence[str], owner: str) -> dict[str, Any]:
    """Return the values of ``keys`` in ``config``: ``decoder.*`` is the whole section.

    A key the config does not have, in a section it has, is refused: a
    misspelt key would make every run's slice alike, and runs differing in
    the key's real name would share forward outputs they must not share. A
    section the config lacks altogether (``decoder.*`` with no ``decoder``)
    is None: its defaults hold.

    Examples
    --------
    >>> cfg = OmegaConf.create({"decoder": {"beam_size": 4, "lm": None}, "scoring": "basic"})
    >>> config_slice(cfg, ["decoder.*"], "Decode.forward_keys")
    {'decoder.*': {'beam_size': 4, 'lm': None}}
    >>> config_slice(cfg, ["model.*", "model.size"], "Decode.forward_keys")
    {'model.*': None, 'model.size': None}
    >>> config_slice(cfg, ["decoder.beamsize"], "Decode.forward_keys")
    Traceback (most recent call last):
    ...
    kit.ConfigError: decoder.beamsize: ... no such key; did you mean 'decoder.beam_size'?
        full_key: decoder.beamsize
        fix: name the config keys forward reads, as the config spells them (e.g. `decoder.*`)
    """
    if isinstance(keys, str) or not all(isinstance(key, str) and key for key in keys):
        raise TypeError(f"{owner} must be a tuple of config keys such as ('decoder.*',)")
    base = config if config is not None else OmegaConf.create({})
    out: dict[str, Any] = {}
    for key in keys:
        path = key.removesuffix(".*")
        missing = object()
        value = OmegaConf.select(base, path, default=missing, throw_on_missing=False)
        parent = path.rpartition(".")[0]
        absent = OmegaConf.select(base, parent, default=missing) is missing if parent else False
        if value is missing and (absent or key.endswith(".*")):
            value = None  # a section left out: its defaults hold
        if value is missing:
            guess = closest(path, _paths(base))
            hint = f"; did you mean '{guess}'?" if guess else ""
            raise error(
                f"{owner} names it, but the config has no such key{hint}",
                full_key=path,
                fix="name the config keys forward reads, as the config spells them "
                "(e.g. `decoder.*`)",
            )
        if isinstance(value, DictConfig | ListConfig):
            value = OmegaConf.to_container(value, resolve=True)
        out[key] = value
    return out


def forward_digest(task: Task, config: DictConfig | None) -> str:
    """Return the digest of what ``task``'s forward is: its code and its config slice.

    The code is what the workers call (``forward`` or the runner's wrapper
    of it), read by :func:`~kit._base.fingerprint.code_fingerprint` with the
    functions and classes it reaches: a helper of its module edited changes
    it, as does a library's version.
    """
    # Here, not at the top: the fingerprint reads installed versions, which `import kit` need not.
    from kit._base.fingerprint import code_fingerprint, parts_digest

    sliced = config_slice(config, task.forward_keys or (), f"{task.owner}.forward_keys")
    return parts_digest(
        "forward",
        code_fingerprint(task.forward),
        json.dumps(sliced, sort_keys=True, default=repr),
    )


def _paths(config: Any, prefix: str = "") -> list[str]:
    """Every dotted key of ``config`` (for a did-you-mean)."""
    if not isinstance(config, DictConfig):
        return []
    found = []
    for key in config:
        path = f"{prefix}{key!s}"
        found.append(path)
        found.extend(_paths(config._get_node(key), path + "."))
    return found
