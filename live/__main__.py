"""`python -m live preflight|import-topology`: the read-only commands on a live cluster (also
available as `python -m offline preflight|import-topology`)."""

from __future__ import annotations

import argparse
import sys

from config import ConfigError
from live.cli import add_commands
from offline.exit import finish
from offline.stackfile import StackFileError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m live", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    add_commands(sub, "stack name (Pulumi.<stack>.yaml)", "read the stack's config from this file instead")
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except (ConfigError, StackFileError) as error:
        print(error, file=sys.stderr)
        return 2


if __name__ == "__main__":
    finish(main())
