"""The scale-out command: the ``kit submit`` line that runs a config, as edited, on a cluster."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kit._base.atomic import atomic_file
from kit.cluster._builders import EXTRA_RESOURCES, JOB_QUEUES, JOB_RESOURCES
from kit.config import config_hash, to_overrides

_ABSENT = object()


def scale_out_command(
    base: DictConfig,
    config: DictConfig,
    cluster: Sequence[str] = ("parallel.env=slurm",),
    *,
    config_path: str | os.PathLike[str] = "config.yaml",
    save_dir: str | os.PathLike[str] = Path("runs") / "scale-out",
) -> str:
    """Return the ``kit submit`` command that runs ``config`` on the cluster ``cluster`` says.

    It runs as printed from the current folder (a notebook's): the config
    file ``base`` was loaded from is named by a path relative to it, and
    one that lives elsewhere (an installed package) or was never written is
    saved in ``save_dir`` first, never beside the notebook. The overrides
    lead from that file to ``config`` (the config as edited), then to the
    cluster's; a job queue gets the resources every job needs
    (``parallel.options.cores`` and ``memory``) when the config has none.

    Parameters
    ----------
    base
        The config as loaded from ``config_path``.
    config
        The config to run: ``base`` with the edits made since.
    cluster
        Overrides that choose the cluster (``parallel.env=slurm``...).
    config_path
        The file ``base`` came from (need not exist).
    save_dir
        Where a config file not below the current folder is saved.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from kit import load_config
    >>> saved = pathlib.Path(tempfile.mkdtemp())
    >>> base = load_config({"beam": 1, "parallel": {"env": "inline"}})
    >>> command = scale_out_command(base, load_config(base, ["beam=5"]),
    ...                             config_path="decode.yaml", save_dir=saved)
    >>> command.split()[:2], command.split()[3:]  # [2] is the saved file, from here
    (['kit', 'submit'], ['beam=5', 'parallel.env=slurm', '+parallel.options.cores=1',
     '+parallel.options.memory=2GB'])
    >>> (saved / "decode.yaml").exists()
    True
    """
    words, _ = scale_out_config(config, cluster)
    # "+" where the key is new to the file: the override grammar refuses to add silently.
    words = [
        o if OmegaConf.select(base, o.split("=", 1)[0], default=_ABSENT) is not _ABSENT else f"+{o}"
        for o in words
    ]
    path = _config_file(base, Path(config_path), Path(save_dir))
    command = ["kit", "submit", path, *to_overrides(base, config), *words]
    return " ".join(shlex.quote(word) for word in command)


def scale_out_config(
    config: DictConfig, cluster: Sequence[str] = ("parallel.env=slurm",)
) -> tuple[list[str], DictConfig]:
    """Return the overrides that move ``config`` to the cluster, and the config they make.

    ``cluster``'s overrides, then the resources every job of a job queue
    needs (``parallel.options.cores`` and ``memory``) where the config has none.

    Examples
    --------
    >>> from kit import load_config
    >>> words, moved = scale_out_config(load_config({"parallel": {"env": "inline"}}))
    >>> words, moved.parallel.options.memory
    (['parallel.env=slurm', 'parallel.options.cores=1', 'parallel.options.memory=2GB'], '2GB')
    """
    words = [o.lstrip("+") for o in cluster]
    target = OmegaConf.merge(config, OmegaConf.from_dotlist(words))
    env = str(OmegaConf.select(target, "parallel.env", default=""))
    if env in JOB_QUEUES:
        defaults = {**JOB_RESOURCES, **EXTRA_RESOURCES.get(env, {})}
        missing = [
            f"parallel.options.{key}={value}"
            for key, value in defaults.items()
            if OmegaConf.select(target, f"parallel.options.{key}", default=None) is None
        ]
        words += missing
        target = OmegaConf.merge(target, OmegaConf.from_dotlist(missing))
    assert isinstance(target, DictConfig)
    return words, target


def _config_file(base: Any, path: Path, folder: Path) -> str:
    """Return the config file as a path from here, saved first if it is not below here."""
    here = Path.cwd().resolve()
    if path.exists():
        try:
            return str(path.resolve().relative_to(here))
        except ValueError:
            pass
    text = OmegaConf.to_yaml(base)
    copy_path = folder / path.name
    if copy_path.exists() and copy_path.read_text() != text:
        copy_path = folder / f"{path.stem}-{config_hash(base)[:8]}{path.suffix}"
    if not copy_path.exists():
        with atomic_file(copy_path) as fh:  # a dangling link there is refused, not followed
            fh.write(text)
    try:
        return str(copy_path.resolve().relative_to(here))
    except ValueError:
        return str(copy_path.resolve())
