"""The project's command line: one tool, `volcano-platform`, with a subcommand for everything users run.

`render`, `diff` and `check` run the program offline; `preflight` and `import-topology` read a live
cluster (or a recorded dump), read-only. `cli.exit` holds the exit codes every subcommand uses.
"""

from __future__ import annotations

import gc
import os


def _quiet_start() -> None:
    """What every command does before it imports anything: the cyclic collector off (below), and
    pydantic's plugin search off. Pydantic looks for plugins in the entry points of every installed
    distribution when the first model is built, a fiftieth of a render; the stack's models are
    the tool's own and no plugin watches them. A user's own `PYDANTIC_DISABLE_PLUGINS` wins."""
    gc.disable()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def run() -> None:
    """The console script `volcano-platform`. A command runs at most two programs and ends with
    `os._exit`, so the cyclic collector is switched off before anything is imported: it would trace
    the hundreds of thousands of objects the imports and the runs create, nearly all of which live
    until the end (tracing them during the imports alone was a tenth of an example render), only to
    free what exiting frees anyway. `cli.main.main()` called in-process (tests) leaves it alone."""
    _quiet_start()
    from cli.exit import finish
    from cli.main import main

    finish(main())


def run_deprecated(spelling: str) -> None:
    """`python -m offline` and `python -m live`: the earlier spellings of the tool, kept for this
    release because workflows and scripts call them."""
    _quiet_start()
    import sys

    from cli.exit import finish
    from cli.main import TOOL, main

    print(f"note: `{spelling}` is deprecated; run `{TOOL} <command>` (.venv/bin/{TOOL})", file=sys.stderr)
    finish(main(prog=spelling))
