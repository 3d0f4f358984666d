"""The check before scaling out: the same answers at scale, what the run will cost.

:func:`check` runs a spread sample of a run's items in this process (twice),
on the configured cluster and batched as configured; compares every record
field; names the likely cause of a difference (:data:`CAUSES`); forecasts the
full run's wall time and slot-hours with an 80% interval; sets the workers'
peak memory against their limit; and checks every item of the set.
``kit check CONFIG`` and ``Runner.check`` call it; a runner's own
:class:`CheckHooks` (every :class:`kit.Runner` has them) say what may
differ, what an item costs and what is wrong with the set.
"""

from kit._check_hooks import CheckHooks
from kit.check._check import CheckResult, DataCheck, Memory, check, spread, target_limit
from kit.check._differences import Difference, differences
from kit.check._forecast import Forecast, forecast
from kit.check._parity import CAUSES, Parity
from kit.check._sight import ENV_VARS, Sight

__all__ = [
    "CAUSES",
    "ENV_VARS",
    "CheckHooks",
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
