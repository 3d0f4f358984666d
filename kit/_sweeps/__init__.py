"""Sweeps and searches: trials of one runner over config overrides.

:func:`kit.sweep` and :func:`kit.submit_sweep` run a grid
(``kit/_sweeps/sweep.py``); :func:`kit.search` and :func:`kit.submit_search`
an Optuna search (``kit/_sweeps/search.py``). What a sweep gives back
(``Trial``, ``SweepResult``) is vocabulary in ``kit/_trials/trial.py``, and a sweep
folder is read back by :class:`kit.detached.DetachedSweep`.
"""
