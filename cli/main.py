"""`volcano-platform`: one argument parser for every subcommand, and one way of ending a run.

Each subcommand returns one of the codes of `cli.exit`. Errors the user can fix (invalid config, an
unreadable file or dump, a revision that does not exist, arguments that do not fit) end with the
message and exit 2; anything else is a bug and ends with one line, `error: internal error ...`,
and exit 3, never with a traceback (`VOLCANO_PLATFORM_TRACEBACK=1` prints it, for developers).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from cli.cluster_commands import add_cluster_commands
from cli.exit import EXIT_CODES_HELP, INTERNAL_ERROR, INVALID_INPUT, UsageError
from cli.fleet_command import add_fleet_command
from cli.init_command import add_init_command
from cli.render_commands import add_render_commands
from cli.sandbox_command import add_sandbox_command
from config import ConfigError
from config.credential_shapes import redact
from config.errors import one_line
from config.stack_file.reader import StackFileError
from live.cluster_state import StateError
from offline.diff import RevisionError
from offline.render_folder import RenderFolderError

TOOL = "volcano-platform"
TRACEBACK_VARIABLE = "VOLCANO_PLATFORM_TRACEBACK"


class _Formatter(argparse.HelpFormatter):
    """Wraps descriptions, and keeps the lines of an epilog that start with two spaces (examples)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        for paragraph in text.split("\n"):
            if paragraph.startswith("  "):
                lines.append(indent + paragraph)
            else:
                lines.append(super()._fill_text(paragraph, width, indent))
        return "\n".join(lines)


def build_parser(prog: str = TOOL) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Render, diff and check stacks of the program offline, under Pulumi's mock runtime (no "
        "cluster, credentials or Pulumi CLI needed), and compare them with a live cluster, read-only.",
        epilog=f"{EXIT_CODES_HELP}.\nRun `{prog} <command> --help` for a command's options and examples.",
        formatter_class=_Formatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    add_render_commands(sub, _Formatter)
    add_cluster_commands(sub, _Formatter)
    add_init_command(sub, _Formatter)
    add_sandbox_command(sub, _Formatter)
    add_fleet_command(sub, _Formatter)
    for command in sub.choices.values():
        command.epilog = f"{command.epilog}\n\n{EXIT_CODES_HELP}." if command.epilog else f"{EXIT_CODES_HELP}."
    return parser


def main(argv: list[str] | None = None, prog: str = TOOL) -> int:
    """Parse, run one subcommand and return its exit code (tests call this in-process)."""
    args = build_parser(prog).parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except ConfigError as error:
        print(error, file=sys.stderr)
    except (StackFileError, StateError, RevisionError, RenderFolderError, UsageError) as error:
        print(f"error: {error}", file=sys.stderr)
    except Exception as error:  # the one place that turns a bug into exit 3
        if os.environ.get(TRACEBACK_VARIABLE):
            traceback.print_exc()
        print(
            f"error: internal error ({type(error).__name__}: {redact(one_line(str(error)))[:500]}); this is a bug in "
            f"{TOOL}, please report it "
            f"with the command you ran (set {TRACEBACK_VARIABLE}=1 to print the traceback)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR
    return INVALID_INPUT
