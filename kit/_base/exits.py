"""What a Kit command's exit code means, and how an error becomes one.

The command line and a detached driver end alike: :func:`guarded` turns
what a command raised into its code, said on stderr without a traceback.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from kit._base.errors import ClusterError, DriverLostError, KitError, ProviderSetupError, RunError
from kit._base.format import printable

EXIT_OK = 0
EXIT_ITEMS_FAILED = 1
EXIT_USAGE = 2
EXIT_TRIALS_FAILED = 3
EXIT_NO_TRIALS = 4
EXIT_GATE = 5
EXIT_CHECK = 6
EXIT_REFUSED = 7
EXIT_NOTHING = 8


#: What each exit code means, as ``kit --help`` (and the manual's CLI page) lists them.
EXIT_CODES = {
    EXIT_OK: "success (for a run: every item ran; for a sweep: every trial completed with "
    "every item, or was pruned)",
    EXIT_ITEMS_FAILED: "some items failed or were not run, the run or sweep was interrupted, "
    "or it failed unexpectedly (completed chunks are kept)",
    EXIT_USAGE: "bad config, file, override, option value or usage",
    EXIT_TRIALS_FAILED: "a trial of the sweep ended in error or stopped early (its run failed, "
    "or it gave no number for the metric)",
    EXIT_NO_TRIALS: "a sweep ran no trial at all",
    EXIT_GATE: "a score exceeded its gate (`--max-wer`, `--max-cer` of `kit score` or `kit run`)",
    EXIT_CHECK: "the check failed (`kit check`: the records of its sample differ between the "
    "ways it ran them, or items of the set cannot run)",
    EXIT_REFUSED: "refused on a shared cluster (`kit cluster cancel` of another's run without "
    "the teacher's token; `kit cluster claim` of a class someone else claimed)",
    EXIT_NOTHING: "nothing to judge or send: a gate on a run with no scored utterance (every "
    "item failed, or no reference has a word), or `kit export-tracking` that did not send "
    "every run it was asked to",
}


#: Trials of a sweep end on their runs' threads: one line at a time, never two interleaved.
_SAYING = threading.Lock()


def say(*parts: object, file: Any = None, end: str = "\n") -> None:
    """Print, with control characters escaped: what Kit prints may come from records or files."""
    text = " ".join(printable(part) for part in parts) + end
    with _SAYING:
        print(text, file=file, end="", flush=True)


def guarded(call: Callable[[], int], debug: bool = False) -> int:
    """Return what ``call`` returns, or the exit code of what it raised, said on stderr.

    The command line's handlers and a detached sweep's driver end so.
    """
    try:
        code: int = call()
    except KeyboardInterrupt:
        say("kit: interrupted; completed chunks are kept, run again to resume", file=sys.stderr)
        return EXIT_ITEMS_FAILED
    except (ProviderSetupError, RunError, ClusterError, DriverLostError) as exc:
        # The work or the place it runs failed, not the input.
        say(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_ITEMS_FAILED
    except (KitError, FileNotFoundError, ImportError) as exc:
        say(f"kit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if debug:
            raise
        say(
            f"kit: error: {type(exc).__name__}: {exc} (`kit --debug ...` shows the traceback)",
            file=sys.stderr,
        )
        return EXIT_ITEMS_FAILED
    return code
