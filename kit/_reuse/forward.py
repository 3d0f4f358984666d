"""The forward the workers call when outputs may be reused: a stored record, finished, or forward.

:class:`ReusingForward` is sent to the workers in place of ``forward``
(it pickles: its parts are data and module-level functions). For an item
the driver found a record for, it returns ``finish(record, config)``
without calling ``forward``; for the others it calls ``forward``. A
share ``verify`` of the reused items, drawn at random, runs ``forward``
too, and an item whose fresh record differs from its reused one fails,
naming the field: ``forward`` then reads something its ``forward_keys``
and the fingerprints do not cover (an environment variable, a file).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kit._base.differences import Difference, differences, short
from kit._base.errors import ReuseMismatchError
from kit.result import Index


def mismatch_message(index: Index, difference: Difference, owner: str) -> str:
    """Say that ``index``'s reused record differs, where, and what to do."""
    return (
        f"item {index!r}: its reused record differs from the one forward makes now in "
        f"field '{difference.field or 'record'}' ({short(difference.a)} reused, "
        f"{short(difference.b)} now); {owner}.forward reads something its forward_keys "
        "and the fingerprints do not cover (an environment variable, a file): add it to "
        "forward_keys or to the provider's reuse_fingerprint, or run with runner.reuse=false"
    )


@dataclass(frozen=True)
class ReusingForward:
    """``forward``, save for the items ``known`` holds a record of: those are finished, not run.

    Parameters
    ----------
    forward
        What the workers would call otherwise (``Runner.task_forward()``).
    finish
        ``finish(record, config) -> record``: the runner's post-processing.
    known
        The reused records, by item index.
    verify
        The share of reused items run again and compared (0 to 1).
    seed
        Draws which items are verified (the run's id: each run draws anew).
    owner
        The runner's name, for messages.
    ignore, rtol
        Fields not compared, and numbers' relative tolerance (the runner's
        ``check_ignore`` and ``check_rtol``: a decoding's time differs run to run).

    Examples
    --------
    >>> def square(idx):
    ...     return {"y": idx * idx}
    >>> def finish(record, config):
    ...     return record
    >>> wrapped = ReusingForward(square, finish, {3: {"y": 9}}, verify=1.0, seed="a")
    >>> wrapped(3), wrapped(4)
    ({'y': 9}, {'y': 16})
    >>> ReusingForward(square, finish, {3: {"y": 8}}, verify=1.0, seed="a")(3)
    Traceback (most recent call last):
    ...
    kit.errors.ReuseMismatchError: item 3: ... in field 'y' (8 reused, 9 now); ...
    """

    forward: Callable[..., Any]
    finish: Callable[[Any, Any], Any]
    known: Mapping[Index, Any]
    verify: float = 0.01
    seed: str = ""
    owner: str = "Runner"
    ignore: Sequence[str] = field(default_factory=tuple)
    rtol: float = 0.0

    def __call__(self, idx: Any, **kwargs: Any) -> Any:
        config = kwargs.get("config")
        if isinstance(idx, list):
            return self._batch(idx, config, kwargs)
        if idx not in self.known:
            return self.forward(idx, **kwargs)
        reused = self.finish(copy.deepcopy(self.known[idx]), config)
        if self._verified(idx):
            self._compare(idx, reused, self.forward(idx, **kwargs))
        return reused

    def _batch(self, indices: list[Any], config: Any, kwargs: Mapping[str, Any]) -> list[Any]:
        out: dict[int, Any] = {}
        run = []
        for j, idx in enumerate(indices):
            if idx in self.known:
                out[j] = self.finish(copy.deepcopy(self.known[idx]), config)
            if idx not in self.known or self._verified(idx):
                run.append(j)
        if run:
            fresh = list(self.forward([indices[j] for j in run], **kwargs))
            if len(fresh) != len(run):
                raise ValueError(
                    f"forward returned {len(fresh)} results for a batch of {len(run)} items; "
                    "return one result per item"
                )
            for j, record in zip(run, fresh, strict=True):
                if j in out:
                    self._compare(indices[j], out[j], record)
                else:
                    out[j] = record
        return [out[j] for j in range(len(indices))]

    def _verified(self, idx: Index) -> bool:
        """Whether ``idx`` is among the reused items run again (a draw of this run's own)."""
        return self.verify > 0 and random.Random(f"{self.seed}:{idx!r}").random() < self.verify

    def _compare(self, idx: Index, reused: Any, fresh: Any) -> None:
        found = differences(
            idx, 0, reused, fresh, ("reused", "computed now"), rtol=self.rtol, ignore=self.ignore
        )
        if found:
            raise ReuseMismatchError(mismatch_message(idx, found[0], self.owner))
