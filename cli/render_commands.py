"""`render`, `diff` and `check`: the subcommands that run the program offline, under Pulumi's mock
runtime (no cluster, credentials or Pulumi CLI)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.exit import FOUND, OK, UsageError, stack_name
from cli.prediction import engine_argument

if TYPE_CHECKING:
    from offline.render import StackRender

PROJECT_DIR = Path(__file__).resolve().parent.parent
STACK_HELP = "stack name: the program reads Pulumi.<stack>.yaml next to Pulumi.yaml"
CONFIG_FILE_HELP = (
    "read the stack's config from this file instead of Pulumi.<stack>.yaml (e.g. a candidate config in a "
    "pull request, or a stack file kept outside the project); the stack name still names the stack"
)


def render_stack_of(args: argparse.Namespace) -> StackRender:
    from offline.render import render_stack

    return render_stack(PROJECT_DIR, args.stack, Path(args.config_file) if args.config_file else None)


def cmd_render(args: argparse.Namespace) -> int:
    from offline.render import write_render
    from offline.render_folder import mark_stale

    out = Path(args.out or PROJECT_DIR / "out" / args.stack)
    try:
        result = render_stack_of(args)
    except Exception as error:
        mark_stale(out, str(error).splitlines()[0] if str(error) else type(error).__name__)
        raise
    write_render(result, out)
    for warning in result.spec.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    rendered = result.rendered
    print(
        f"rendered stack {args.stack}: {len(rendered.objects)} objects, {len(rendered.releases)} "
        f"Helm release(s) -> {out}"
    )
    return OK


def cmd_diff(args: argparse.Namespace) -> int:
    from offline.diff import changed_stack_files, render_at_revision
    from offline.render import write_render
    from offline.review import diff_dirs, diff_markdown

    if args.stack:
        if not args.base:
            raise UsageError("diff --stack needs --base <git-rev>")
        if args.base.startswith("-"):
            # git would read it as one of its own options.
            raise UsageError(f"--base {args.base!r} is not a git revision (it starts with `-`)")
        with tempfile.TemporaryDirectory(prefix="vp-diff-") as tmp:
            keep = Path(args.keep or tmp).resolve()  # the base is rendered from another directory
            old, new = keep / "base", Path(args.out or keep / "head")
            base_file = Path(args.base_config_file) if args.base_config_file else None
            if base_file is not None and not base_file.is_file():
                raise UsageError(f"--base-config-file {base_file} is not a file")
            render_at_revision(PROJECT_DIR, args.base, args.stack, old, base_file)
            head = render_stack_of(args)
            write_render(head, new)
            files = [] if args.config_file else changed_stack_files(PROJECT_DIR, args.base, args.stack)
            whatif = _whatif(args, head) if args.from_file else ""
            if args.markdown:
                title = f"`{args.stack}`: `{args.base}` → this change"
                result, text = diff_markdown(old, new, title, files, whatif)
            else:
                result, text = diff_dirs(old, new, f"stack {args.stack}: {args.base} -> working tree", files, whatif)
            print(text, end="")
            return OK if result.empty else FOUND
    if len(args.dirs) != 2:
        raise UsageError("diff needs two render directories, or --stack and --base")
    if args.from_file:
        raise UsageError("diff --from needs --stack and --base (the what-if renders the stack)")
    old, new = (Path(d) for d in args.dirs)
    for directory in (old, new):
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
    result, text = diff_markdown(old, new) if args.markdown else diff_dirs(old, new)
    print(text, end="")
    return OK if result.empty else FOUND


def _whatif(args: argparse.Namespace, head: StackRender) -> str:
    """What the scheduler will do with the change on the recorded cluster `--from` names, the
    verdicts the change makes first. A snapshot that cannot be read is said in its place: the diff
    itself still stands."""
    from cli.prediction import predict_for
    from live.cluster_state import StateError
    from offline.markdown import code
    from whatif.report import markdown

    args.kubeconfig = args.context = None  # a diff never reads a live cluster
    try:
        return markdown(predict_for(args, head), before=_base_prediction(args))
    except StateError as error:
        return f"_No what-if: the recorded cluster cannot be read ({code(str(error))})._\n"


def _base_prediction(args: argparse.Namespace) -> Any:
    """The what-if of the base revision's stack on the same snapshot, answered by this checkout's
    code, so the verdicts the change makes can lead. For a stack new in the change, an empty one
    (every model is then new); None where this code cannot read the base's stack file (the report
    then lists every model as before)."""
    from cli.prediction import predict_for
    from config.errors import ConfigError
    from config.stack_file.reader import StackFileError
    from offline.diff import extract_revision
    from offline.engine import ProgramError
    from offline.render import render_stack
    from whatif.predict import Prediction

    with tempfile.TemporaryDirectory(prefix="vp-base-whatif-") as tmp:
        tree = Path(tmp)
        extract_revision(PROJECT_DIR, args.base, tree)
        stack_file = Path(args.base_config_file) if args.base_config_file else tree / f"Pulumi.{args.stack}.yaml"
        if not stack_file.is_file():
            return Prediction(args.stack, "", "", [], [], [])
        try:
            base = render_stack(PROJECT_DIR, args.stack, stack_file)
        except (ConfigError, StackFileError, ProgramError):
            return None
        return predict_for(args, base)


def cmd_check(args: argparse.Namespace) -> int:
    from offline.check import check_render

    result = render_stack_of(args)
    report = check_render(result)
    for note in report.notes:
        print(f"note: {note}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    for error in report.errors:
        print(f"error: {error}")
    status = "FAILED" if report.errors else "passed"
    print(f"check {status} for stack {args.stack}: {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    return FOUND if report.errors else OK


def command_parser(
    sub: Any, formatter: type[argparse.HelpFormatter], name: str, summary: str, description: str, *examples: str
) -> argparse.ArgumentParser:
    """A subcommand with its one-line help, its description and its examples, laid out alike."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog="examples:\n" + "\n".join(f"  {example}" for example in examples),
        formatter_class=formatter,
    )
    return parser


def add_render_commands(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    render = command_parser(
        sub,
        formatter,
        "render",
        "render a stack to manifests, Helm values, a summary, a topology picture and an images list",
        "Run the program for one stack offline and write what it would register: manifests/, helm/, "
        "resources.yaml, summary.md, summary.json, topology.svg and images.txt.",
        "volcano-platform render --stack dev",
        "volcano-platform render --stack aicloud-a --out /tmp/aicloud-a",
        "volcano-platform render --stack lab --config-file ~/clusters/Pulumi.lab.yaml",
    )
    render.add_argument("--stack", type=stack_name, required=True, help=STACK_HELP)
    render.add_argument("--config-file", help=CONFIG_FILE_HELP)
    render.add_argument("--out", help="directory to write (default: out/<stack>); files the render owns are replaced")
    render.set_defaults(handler=cmd_render)

    diff = command_parser(
        sub,
        formatter,
        "diff",
        "compare two renders, or a stack at a git revision with the working tree",
        "Compare two render directories object by object (matched by URN), or render --stack at --base "
        "and in the working tree and compare those. Replacements and provider changes are called out.",
        "volcano-platform diff --stack aicloud-a --base origin/main",
        "volcano-platform diff --stack aicloud-a --base origin/main --markdown --keep out/diff/aicloud-a",
        "volcano-platform diff --stack aicloud-a --base origin/main --from cluster.json",
        "volcano-platform diff out/old out/new",
    )
    diff.add_argument("dirs", nargs="*", metavar="DIR", help="two render directories: old, then new")
    diff.add_argument("--stack", type=stack_name, help=STACK_HELP + " (with --base)")
    diff.add_argument(
        "--base-config-file",
        help="the base side's stack file when it lives outside the repository (with --stack, --base and "
        "--config-file): the program is the base revision's, the config this file",
    )
    diff.add_argument("--base", help="git revision to compare the working tree with, e.g. origin/main")
    diff.add_argument("--config-file", help=CONFIG_FILE_HELP + " (the working-tree side)")
    diff.add_argument("--out", help="keep the working-tree render in this directory")
    diff.add_argument(
        "--keep", metavar="DIR", help="keep both renders, as DIR/base and DIR/head (e.g. for their pictures)"
    )
    diff.add_argument(
        "--markdown",
        action="store_true",
        help="write Markdown for a pull request: platform changes first (models, tenants, placement, warnings), "
        "then each object's diff collapsed",
    )
    diff.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="a recorded cluster (a JSON or YAML List, e.g. the snapshot the default branch's preview keeps): "
        "the diff then says what the scheduler will do with the change there (with --stack and --base)",
    )
    engine_argument(diff)
    diff.set_defaults(handler=cmd_diff)

    check = command_parser(
        sub,
        formatter,
        "check",
        "validate config, schemas (Kubernetes and vendored CRDs), chart values and the policy pack",
        "Render the stack, then validate every object and both charts' values against the vendored "
        "schemas, parse every PromQL query and run the policy pack.",
        "volcano-platform check --stack aicloud-a",
        "volcano-platform check --stack aicloud-a --config-file candidate.yaml",
    )
    check.add_argument("--stack", type=stack_name, required=True, help=STACK_HELP)
    check.add_argument("--config-file", help=CONFIG_FILE_HELP)
    check.set_defaults(handler=cmd_check)
