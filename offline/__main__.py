"""Command line of the offline engine.

  python -m offline render --stack <name> [--config-file <path>] --out <dir>
  python -m offline diff <old-dir> <new-dir>
  python -m offline diff --stack <name> --base <git-rev> [--out <dir>]
  python -m offline check --stack <name> [--config-file <path>]

Exit codes: 0 success (diff: no differences), 1 failure (diff: differences), 2 invalid config
or usage.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from config import ConfigError
from offline.engine import ProgramError
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
    from offline.diff import diff_dirs, render_at_revision
    from offline.render import write_render

    if args.stack:
        if not args.base:
            print("diff --stack needs --base <git-rev>", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="vp-diff-") as tmp:
            old, new = Path(tmp) / "base", Path(args.out or Path(tmp) / "head")
            render_at_revision(PROJECT_DIR, args.base, args.stack, old)
            write_render(_render(args.stack, args.config_file), new)
            result, text = diff_dirs(old, new)
            print(f"stack {args.stack}: {args.base} -> working tree")
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
    result, text = diff_dirs(old, new)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline", description="Render, diff and check stacks offline.")
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="render a stack to manifests")
    render.add_argument("--stack", required=True)
    render.add_argument("--config-file")
    render.add_argument("--out")
    diff = sub.add_parser("diff", help="compare two renders, or a stack at a git revision with the working tree")
    diff.add_argument("dirs", nargs="*")
    diff.add_argument("--stack")
    diff.add_argument("--base")
    diff.add_argument("--config-file")
    diff.add_argument("--out", help="keep the working-tree render here")
    check = sub.add_parser("check", help="validate config, schemas and policies")
    check.add_argument("--stack", required=True)
    check.add_argument("--config-file")
    args = parser.parse_args(argv)
    handler = {"render": cmd_render, "diff": cmd_diff, "check": cmd_check}[args.command]
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
    sys.exit(main())
