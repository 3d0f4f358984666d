"""Add make lab's JupyterLab settings to an overrides.json, keeping what it holds.

``python settings.py OVERRIDES_JSON``: no "Jupyter news?" prompt over the first
notebook, and widget state saved with each notebook, so a notebook reopened on
a fresh kernel shows each dashboard's last picture, not "model not found".
A setting already in the file is left as it is: it was set on purpose.
"""

import json
import sys
from pathlib import Path

SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"},
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
}


def main(path: Path) -> None:
    overrides = json.loads(path.read_text()) if path.is_file() else {}
    for plugin, settings in SETTINGS.items():
        for key, value in settings.items():
            overrides.setdefault(plugin, {}).setdefault(key, value)
    path.write_text(json.dumps(overrides, indent=2) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
