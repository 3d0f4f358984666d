"""What a runner says of its ``forward`` for its outputs to be reused: forward_keys, finish."""

from __future__ import annotations

from typing import Any, ClassVar


class ReuseHooks:
    """A runner's side of reuse: the config keys ``forward`` reads, and what comes after it.

    A runner that sets ``forward_keys`` promises that ``forward``'s output
    for an item depends on those config keys, its own code, the env and the
    item, and on nothing else; what other keys change (a normaliser, a
    metric) ``finish`` applies to a stored output. Runs into one results
    root then decode once and score many: an item's output is taken from a
    run beside this one whose forward, keys, env and item match (see
    docs/reuse.md).

    Examples
    --------
    >>> class Scale(ReuseHooks):
    ...     forward_keys = ("model.*",)
    ...     @staticmethod
    ...     def finish(record, config):
    ...         return {**record, "rounded": round(record["y"], config.digits)}
    >>> from omegaconf import OmegaConf
    >>> Scale.finish({"y": 1.2345}, OmegaConf.create({"digits": 2}))
    {'y': 1.2345, 'rounded': 1.23}
    """

    #: The config keys ``forward`` reads (``decoder.*`` is the whole ``decoder``
    #: section); None (the default): its outputs are never reused.
    forward_keys: ClassVar[tuple[str, ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "finish" in cls.__dict__ and not isinstance(cls.__dict__["finish"], staticmethod):
            raise TypeError(
                f"{cls.__qualname__}.finish must be a @staticmethod (it runs on the workers, "
                "and nothing of the runner is sent there): add @staticmethod above it"
            )

    @staticmethod
    def finish(record: Any, config: Any) -> Any:
        """Return a reused ``record`` as this run's ``config`` makes it; override this.

        ``forward`` made ``record`` under a config alike in ``forward_keys``;
        recompute from it what the other keys decide (a score under this
        run's normaliser). The default returns it as it is.
        """
        return record
