"""One naming scheme, gymnasium's: ``num_envs`` and an env's index; older names as aliases.

ml-starter says ``worker_id`` and ``num_workers``, DI-engine ``env_id``. Kit
says ``env_index`` (0 to ``num_envs - 1``) everywhere and takes the old
keywords with a DeprecationWarning.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Let a function take its parameters' old keyword names too.

    Examples
    --------
    >>> @renamed(worker_id="env_index")
    ... def reset(env_index: int) -> int:
    ...     return env_index
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     reset(worker_id=2), str(seen[0].message)
    (2, 'reset(worker_id=...) is now reset(env_index=...)')
    """

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {old}= and {new}=")
                    warnings.warn(
                        f"{fn.__name__}({old}=...) is now {fn.__name__}({new}=...)",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
