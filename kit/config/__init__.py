"""Configs: OmegaConf files, Hydra-style overrides, schemas for kit sections.

Examples
--------
>>> from kit.config import load_config, to_overrides
>>> base = load_config({"parallel": {"env": "local", "n_workers": 2}})
>>> edited = load_config(base, ["parallel.n_workers=4"])
>>> to_overrides(base, edited)
['parallel.n_workers=4']
"""

from kit._base.errors import speak_as as _speak_as
from kit.config._api import config_hash, load_config, resolve_config, save_config, to_overrides
from kit.config._errors import ConfigError
from kit.config._overrides import encode_value
from kit.config._schema import (
    PARALLEL_ENVS,
    CheckConfig,
    ParallelConfig,
    RunnerConfig,
    TrackingConfig,
    config_problems,
    parallel_section,
)

__all__ = [
    "PARALLEL_ENVS",
    "CheckConfig",
    "ConfigError",
    "ParallelConfig",
    "RunnerConfig",
    "TrackingConfig",
    "config_hash",
    "config_problems",
    "encode_value",
    "load_config",
    "parallel_section",
    "resolve_config",
    "save_config",
    "to_overrides",
]

_speak_as(__name__, globals(), __all__)
