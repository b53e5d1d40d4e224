"""Command line of the offline engine.

  python -m offline render --stack <name> [--config-file <path>] --out <dir>
  python -m offline diff <old-dir> <new-dir>
  python -m offline diff --stack <name> --base <git-rev> [--out <dir>]
  python -m offline check --stack <name> [--config-file <path>]
  python -m offline preflight --stack <name> [--from <file>] [--json]      (reads a live cluster)
  python -m offline import-topology --tiers <leaf,spine> [--from <file>]   (reads a live cluster)

Exit codes: 0 success (diff: no differences), 1 failure (diff: differences), 2 invalid config
or usage.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # A command runs at most two programs and ends with `os._exit`, so the cyclic collector stays
    # off: it would trace the hundreds of thousands of objects the imports and the runs create,
    # nearly all of which live until the end (tracing them during the imports alone was a tenth of
    # an example render, and collecting a 10,000-node run's leftovers three seconds), only to free
    # what exiting frees anyway. `main()` called in-process (tests) leaves the collector alone.
    gc.disable()

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from config import ConfigError
from live.cli import add_commands
from offline.engine import ProgramError
from offline.exit import finish
from offline.stackfile import StackFileError

if TYPE_CHECKING:
    from offline.render import StackRender

PROJECT_DIR = Path(__file__).resolve().parent.parent


def _render(stack: str, config_file: str | None) -> StackRender:
    from offline.render import render_stack

    return render_stack(PROJECT_DIR, stack, Path(config_file) if config_file else None)


def cmd_render(args: argparse.Namespace) -> int:
    from offline.render import write_render

    result = _render(args.stack, args.config_file)
    out = Path(args.out or PROJECT_DIR / "out" / args.stack)
    write_render(result, out)
    for warning in result.spec.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    rendered = result.rendered
    print(
        f"rendered stack {args.stack}: {len(rendered.objects)} objects, {len(rendered.releases)} "
        f"Helm release(s) -> {out}"
    )
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from offline.diff import diff_dirs, diff_markdown, render_at_revision
    from offline.render import write_render

    if args.stack:
        if not args.base:
            print("diff --stack needs --base <git-rev>", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="vp-diff-") as tmp:
            keep = Path(args.keep or tmp).resolve()  # the base is rendered from another directory
            old, new = keep / "base", Path(args.out or keep / "head")
            render_at_revision(PROJECT_DIR, args.base, args.stack, old)
            write_render(_render(args.stack, args.config_file), new)
            title = f"stack {args.stack}: {args.base} -> working tree"
            if args.markdown:
                result, text = diff_markdown(old, new, f"`{args.stack}`: `{args.base}` → this change")
            else:
                result, text = diff_dirs(old, new)
                text = f"{title}\n{text}"
            print(text, end="")
            return 0 if result.empty else 1
    if len(args.dirs) != 2:
        print("diff needs two render directories, or --stack and --base", file=sys.stderr)
        return 2
    old, new = (Path(d) for d in args.dirs)
    for directory in (old, new):
        if not directory.is_dir():
            print(f"{directory} is not a directory", file=sys.stderr)
            return 2
    result, text = diff_markdown(old, new) if args.markdown else diff_dirs(old, new)
    print(text, end="")
    return 0 if result.empty else 1


def cmd_check(args: argparse.Namespace) -> int:
    from offline.check import check_render

    result = _render(args.stack, args.config_file)
    report = check_render(result)
    for note in report.notes:
        print(f"note: {note}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    for error in report.errors:
        print(f"error: {error}")
    status = "FAILED" if report.errors else "passed"
    print(f"check {status} for stack {args.stack}: {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    return 1 if report.errors else 0


STACK_HELP = "stack name: the program reads Pulumi.<stack>.yaml next to Pulumi.yaml"
CONFIG_FILE_HELP = (
    "read the stack's config from this file instead of Pulumi.<stack>.yaml (e.g. a candidate config in a "
    "pull request); the stack name still names the stack"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m offline",
        description="Render, diff and check stacks of the program offline, under Pulumi's mock runtime: no cluster, "
        "credentials or Pulumi CLI needed. `preflight` and `import-topology` (also `python -m live`) read a live "
        "cluster, with GET and LIST only, or a recorded dump.",
        epilog="Exit codes: 0 success (diff: no differences), 1 failure (diff: differences), "
        "2 invalid config or usage (preflight: 0 nothing found, 1 findings, 2 invalid config or input).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    render = sub.add_parser(
        "render",
        help="render a stack to manifests, Helm values, a summary, a topology picture and an images list",
        description="Run the program for one stack and write what it would register.",
    )
    render.add_argument("--stack", required=True, help=STACK_HELP)
    render.add_argument("--config-file", help=CONFIG_FILE_HELP)
    render.add_argument("--out", help="directory to write (default: out/<stack>); files the render owns are replaced")
    diff = sub.add_parser(
        "diff",
        help="compare two renders, or a stack at a git revision with the working tree",
        description="Compare two render directories object by object (matched by URN), or render --stack at --base "
        "and in the working tree and compare those. Replacements and provider changes are called out.",
    )
    diff.add_argument("dirs", nargs="*", metavar="DIR", help="two render directories: old, then new")
    diff.add_argument("--stack", help=STACK_HELP + " (with --base)")
    diff.add_argument("--base", help="git revision to compare the working tree with, e.g. origin/main")
    diff.add_argument("--config-file", help=CONFIG_FILE_HELP + " (the working-tree side)")
    diff.add_argument("--out", help="keep the working-tree render in this directory")
    diff.add_argument(
        "--keep", metavar="DIR", help="keep both renders, as DIR/base and DIR/head (e.g. for their pictures)"
    )
    diff.add_argument(
        "--markdown",
        action="store_true",
        help="write Markdown for a pull request: platform changes first (models, quotas, placement, warnings), "
        "then each object's diff collapsed",
    )
    check = sub.add_parser(
        "check",
        help="validate config, schemas (Kubernetes and vendored CRDs), chart values and the policy pack",
        description="Render the stack, then validate every object and both charts' values against the vendored "
        "schemas and run the policy pack. Exit 1 on any error.",
    )
    check.add_argument("--stack", required=True, help=STACK_HELP)
    check.add_argument("--config-file", help=CONFIG_FILE_HELP)
    add_commands(sub, STACK_HELP, CONFIG_FILE_HELP)
    args = parser.parse_args(argv)
    handler = (
        getattr(args, "handler", None) or {"render": cmd_render, "diff": cmd_diff, "check": cmd_check}[args.command]
    )
    try:
        return handler(args)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except StackFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (ProgramError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    finish(main())
