"""``python -m kit._driver OUTPUT_DIR``: the process that drives a detached run."""

import sys
from pathlib import Path

from kit._leave import leave
from kit.detached import drive

if __name__ == "__main__":
    leave(drive(Path(sys.argv[1])))
