"""Jupyter server settings of `make lab` (passed with --config)."""

from pathlib import Path

# Terminals run bash with Kit's rc file (a login shell, Jupyter's default when not
# started from a terminal, would reset PATH from /etc/profile).
c.ServerApp.terminado_settings = {  # type: ignore[name-defined]  # noqa: F821
    "shell_command": ["bash", "--rcfile", str(Path(__file__).with_name("bashrc")), "-i"]
}

# BokehJS from the server, once per page, not 8 MB in each widget cell's output
# (a wheel install enables this by itself; an editable one does not).
c.ServerApp.jpserver_extensions.update({"kit.widgets.bokehjs": True})  # type: ignore[name-defined]  # noqa: F821
