"""Kit: a Jupyter-first experimentation kit.

The core is headless: it imports and runs without Jupyter, ipywidgets or
bokeh, on a laptop, on cluster workers and in batch jobs.

Examples
--------
>>> import kit
>>> cfg = kit.load_config({"parallel": {"env": "local", "n_workers": 2}}, ["parallel.n_workers=3"])
>>> cfg.parallel.n_workers
3
"""

from kit.config import (
    ConfigError,
    config_hash,
    load_config,
    resolve_config,
    save_config,
    to_overrides,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "config_hash",
    "load_config",
    "resolve_config",
    "save_config",
    "to_overrides",
]
