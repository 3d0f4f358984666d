"""ESPnet3's own inference tests, run unchanged against Kit.

The tests come from ESPnet's source distribution on the package index
(``upstream.py`` fetches and checks it); nothing of it is kept in this
repository. ``shim/espnet3`` maps the modules those tests import onto Kit's
classes, and ``outcomes.py`` marks, with its reason, each test Kit fails on
purpose.
"""
