"""The quickstart job: ``python -m kit.examples.quickstart [OVERRIDES...]``.

Loads the quickstart config (``quickstart.yaml`` beside this file), applies
the overrides given on the command line and prints the resolved config.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from kit.config import ConfigError, load_config, resolve_config

CONFIG_PATH = Path(__file__).with_name("quickstart.yaml")


def quickstart_config(overrides: Sequence[str] = ()) -> DictConfig:
    """Return the quickstart config with ``overrides`` applied.

    Examples
    --------
    >>> quickstart_config(["parallel.n_workers=1"]).parallel.n_workers
    1
    """
    return load_config(CONFIG_PATH, overrides)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the resolved quickstart config; return the exit code."""
    overrides = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg = resolve_config(quickstart_config(overrides))
    except ConfigError as exc:
        print(f"quickstart: error: {exc}", file=sys.stderr)
        return 2
    print(f"# quickstart config ({CONFIG_PATH.name}, overrides: {overrides or 'none'})")
    print(OmegaConf.to_yaml(cfg), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
