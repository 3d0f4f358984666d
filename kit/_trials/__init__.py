"""A sweep's trials: how each ended, how they compare, and the record a sweep's folder keeps.

:mod:`~kit._trials.trial` says what a trial is and how it ended (``Trial``,
``TrialState``, ``SweepResult``); :mod:`~kit._trials.compare` compares runs
item by item, with intervals that :mod:`~kit._trials.anytime` keeps valid
at every look; :mod:`~kit._trials.record` makes and reads ``sweep.json``.
The sweep wing (``kit._sweeps``) runs trials; the views, the trackers and a
detached sweep read them from here.
"""
