"""``python -m kit._driver OUTPUT_DIR``: the process that drives a detached run."""

import sys
from pathlib import Path

from kit.detached import drive

if __name__ == "__main__":
    sys.exit(drive(Path(sys.argv[1])))
