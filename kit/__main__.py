"""``python -m kit`` runs the ``kit`` command line."""

from kit.cli import entry

entry()
