"""Exit codes shared by every subcommand, and ending a run quickly.

One set of codes for the whole tool, so a script or a workflow can tell "the command found
something" from "the input was wrong" from "the tool itself failed":

  0  success: rendered, no differences, nothing found
  1  the command's answer is "yes, there is something": differences (diff), errors found (check),
     findings (preflight), labels that do not form a tree (import-topology), a model that evicts,
     waits or never runs (whatif, explain)
  2  the input is wrong: invalid stack config, an unreadable file or dump, bad arguments
  3  internal error: a bug in the tool (reported in one line, never as a traceback)
"""

from __future__ import annotations

import argparse
import os
import re
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


# Pulumi's rule for a stack's name (`tokens.ValidateStackName`: letters, digits, `-`, `_`, `.`, at
# most 100). A name outside it could not be a Pulumi stack, and would reach file names, shells and
# workflow matrices.
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def stack_name(text: str) -> str:
    """argparse type of `--stack`."""
    if not _STACK_NAME.fullmatch(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Pulumi stack name: use letters, digits, `-`, `_` and `.` (at most 100)"
        )
    return text


def finish(code: int) -> NoReturn:
    """Exit without tearing the interpreter down. A render leaves a heap of a few hundred thousand
    objects (the SDK's resources, outputs and modules); freeing them one by one at exit took a
    fifth of an example render. Everything the command wrote is closed by then, and nothing it
    registered with `atexit` matters once it has printed its result, so output is flushed and the
    process ends."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
