"""The check before scaling out: the same answers at scale, what the run will cost.

:func:`check` runs a spread sample of a run's items in this process (twice),
on the configured cluster and batched as configured; compares every record
field; names the likely cause of a difference (:data:`CAUSES`); forecasts the
full run's wall time and slot-hours with an 80% interval; sets the workers'
peak memory against their limit; and checks every item of the set.
``kit check CONFIG`` and ``Runner.check`` call it; what a runner declares
(:attr:`kit.Runner.check_ignore`, ``check_rtol``, ``cost_by``,
``check_items``, ``check_summary``), read into its :class:`kit.task.Task`,
says what may differ, what an item costs and what is wrong with the set.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kit._base.differences import Difference, differences
    from kit.check._check import CheckResult, DataCheck, Memory, check, spread, target_limit
    from kit.check._forecast import Forecast, forecast
    from kit.check._parity import CAUSES, Parity
    from kit.check._sight import ENV_VARS, Sight

__all__ = [
    "CAUSES",
    "ENV_VARS",
    "CheckResult",
    "DataCheck",
    "Difference",
    "Forecast",
    "Memory",
    "Parity",
    "Sight",
    "check",
    "differences",
    "forecast",
    "spread",
    "target_limit",
]

# Imported when first used: `import kit` must not load what a check runs with (the
# cluster, numpy) until one runs.
_HOMES = {
    **dict.fromkeys(
        ("CheckResult", "DataCheck", "Memory", "check", "spread", "target_limit"),
        "kit.check._check",
    ),
    # On the ground floor: a reused forward output is checked with it too (kit._reuse).
    **dict.fromkeys(("Difference", "differences"), "kit._base.differences"),
    **dict.fromkeys(("Forecast", "forecast"), "kit.check._forecast"),
    **dict.fromkeys(("CAUSES", "Parity"), "kit.check._parity"),
    **dict.fromkeys(("ENV_VARS", "Sight"), "kit.check._sight"),
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # found once: the module holds it as an eager import would
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
