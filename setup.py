"""The one compiled module, sclite's alignment; everything else is declared in pyproject.toml.

Optional: where no C compiler builds it, the install still succeeds and
``kit.asr.align`` runs the same programme in Python.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kit.asr._align", ["kit/asr/_align.c"], optional=True)])
