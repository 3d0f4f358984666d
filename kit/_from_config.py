"""Build a provider, a runner and the item indices from a config (for ``kit run``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit.config import config_hash
from kit.config._errors import error, import_class, missing
from kit.config._schema import ItemsConfig, check_section
from kit.provider import EnvironmentProvider, build_provider
from kit.result import Index
from kit.runner import Runner


def build_runner(cfg: DictConfig) -> tuple[Any, Sequence[Index]]:
    """Return ``(runner, indices)`` described by ``cfg``'s provider, runner and items."""
    provider = build_provider(cfg)
    if "runner" not in cfg or "_target_" not in cfg.runner:
        raise missing("runner._target_", "`runner: {_target_: mypkg.MyRunner}`")
    runner_cls = import_class(cfg.runner._target_, "runner._target_", Runner)
    container = OmegaConf.to_container(cfg.runner, resolve=True)
    assert isinstance(container, dict)
    options = {str(k): v for k, v in container.items() if k != "_target_"}
    output_dir = cfg.get("output_dir") or f"runs/{runner_cls.__name__}-{config_hash(cfg)}"
    if not isinstance(output_dir, str):
        raise error(
            f"output_dir must be a path, got {type(output_dir).__name__} {output_dir!r}",
            full_key="output_dir",
            fix="write it as a string, e.g. `output_dir=runs/decode`",
        )
    runner = runner_cls(
        provider,
        parallel=cfg.get("parallel"),
        output_dir=output_dir,
        # Only when set: a runner of one's own with its own __init__ need not take it.
        **({"tracking": cfg.tracking} if cfg.get("tracking") else {}),
        **options,
    )
    return runner, items_of(cfg, provider)


_INTEGER = re.compile(r"-?[0-9]+")


def items_of(cfg: DictConfig, provider: EnvironmentProvider | None = None) -> Sequence[Index]:
    """Return the indices of ``cfg.items``: a range, or the lines of a file.

    A range without ``stop`` runs to the end of the set: ``provider``'s
    :meth:`~kit.EnvironmentProvider.item_count` items.

    Examples
    --------
    >>> from kit import load_config
    >>> list(items_of(load_config({"items": {"start": 2, "stop": 5}})))
    [2, 3, 4]
    """
    if "items" not in cfg:
        raise missing("items", "`items: {start: 0, stop: 100}` or `items: {file: ids.txt}`")
    # Typed by the schema load_config checked it with: a quoted '1' (a sweep's choice('1'))
    # reads as the 1 it was accepted as, not as text range() refuses.
    items = check_section(cfg, "items", ItemsConfig)
    if items.get("file"):
        path = Path(items.file)
        if not path.is_file():
            raise error(
                f"no such file: {path}",
                full_key="items.file",
                fix="give a file with one index per line",
            )
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise error(
                f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason})",
                full_key="items.file",
                fix="give a text file with one index per line",
            ) from None
        out: list[Index] = []
        for line in lines:
            text = line.strip()
            if text and not text.startswith("#"):
                # Only ASCII digits make a number: "²" or "--5" stay ids (str).
                out.append(int(text) if _INTEGER.fullmatch(text) else text)
        return out
    stop = items.get("stop")
    if stop is None:
        stop = None if provider is None else provider.item_count()
    if stop is None:
        said = "" if provider is None else f"; {type(provider).__name__} cannot say its set's size"
        raise error(
            f"give the end of the range (or items.file){said}",
            full_key="items.stop",
            fix="e.g. `items.stop=100`",
        )
    return range(items.start, stop, items.step)
