"""Decode once, score many: a forward output reused by runs alike in forward, keys, env and item.

A runner that declares ``forward_keys`` (:attr:`kit.Runner.forward_keys`) lets runs
into one results root share forward outputs: a sweep over beams and
normalisers decodes once per beam. What an output is keyed by
(:mod:`~kit._reuse.keys`), where outputs are found (:mod:`~kit._reuse.stored`),
the forward the workers call (:mod:`~kit._reuse.forward`), one run's plan
(:mod:`~kit._reuse.plan`).
"""

from kit._reuse.plan import ReusePlan, plan_of

__all__ = ["ReusePlan", "plan_of"]
