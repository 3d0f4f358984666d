"""A run history kept on disk: one numbered output directory per run (``runs/exp/001``...).

Each run is stored like any Kit run (``config.yaml``, ``result.json``,
chunks), so the history is rebuilt from the folder: after a kernel
restart, or in a colleague's notebook opened on the same folder. The
notebook's Experiment keeps its runs this way; a script can too.
"""

from kit.history._folders import user_folder
from kit.history._history import (
    describe_items,
    items_digest,
    new_run_dir,
    read_history,
    record_experiment,
    record_unstarted,
)

__all__ = [
    "describe_items",
    "items_digest",
    "new_run_dir",
    "read_history",
    "record_experiment",
    "record_unstarted",
    "user_folder",
]
