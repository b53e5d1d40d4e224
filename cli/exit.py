"""Exit codes shared by every subcommand, and ending a run quickly.

One set of codes for the whole tool, so a script or a workflow can tell "the command found
something" from "the input was wrong" from "the tool itself failed":

  0  success: rendered, no differences, nothing found
  1  the command's answer is "yes, there is something": differences (diff), errors found (check),
     findings (preflight), labels that do not form a tree (import-topology)
  2  the input is wrong: invalid stack config, an unreadable file or dump, bad arguments
  3  internal error: a bug in the tool (reported in one line, never as a traceback)
"""

from __future__ import annotations

import os
import sys
from typing import Final, NoReturn

OK: Final = 0
FOUND: Final = 1
INVALID_INPUT: Final = 2
INTERNAL_ERROR: Final = 3

EXIT_CODES_HELP: Final = (
    "exit codes: 0 success (nothing differs, nothing found); 1 differences, errors or findings; "
    "2 invalid config, input or arguments; 3 internal error"
)


class UsageError(Exception):
    """Arguments that parse but do not make sense together (reported with exit 2)."""


def finish(code: int) -> NoReturn:
    """Exit without tearing the interpreter down. A render leaves a heap of a few hundred thousand
    objects (the SDK's resources, outputs and modules); freeing them one by one at exit took a
    fifth of an example render. Everything the command wrote is closed by then, and nothing it
    registered with `atexit` matters once it has printed its result, so output is flushed and the
    process ends."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
