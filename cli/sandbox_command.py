"""`volcano-platform sandbox up|down|status|pulumi`: a local cluster of a stack's shape to run
`pulumi up` against and watch the scheduler (`sandbox/`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.exit import FOUND, OK
from cli.render_commands import CONFIG_FILE_HELP, PROJECT_DIR, STACK_HELP, command_parser


def _progress(message: str) -> None:
    print(f"sandbox: {message}", file=sys.stderr, flush=True)


def cmd_sandbox(args: argparse.Namespace) -> int:
    from sandbox.programs import BuildError
    from sandbox.session import Sandbox, SandboxError

    sandbox = Sandbox(args.stack)
    try:
        if args.action == "up":
            return _up(args, sandbox)
        if args.action == "down":
            print(f"sandbox of `{args.stack}` stopped" if sandbox.down() else f"no sandbox of `{args.stack}` runs")
            return OK
        if args.action == "status":
            if sandbox.running():
                print(f"sandbox of `{args.stack}` runs; kubeconfig {sandbox.kubeconfig}")
                return OK
            print(f"no sandbox of `{args.stack}` runs")
            return FOUND
        result = sandbox.pulumi(list(args.pulumi_args))
    except (SandboxError, BuildError) as error:
        # The machine cannot run a sandbox (no Go, a build that failed, a process that did not
        # start): said in one line, never as an internal error.
        print(f"error: {error}", file=sys.stderr)
        return FOUND
    print(result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    return OK if result.returncode == 0 else FOUND


def _up(args: argparse.Namespace, sandbox: Any) -> int:
    from config.loader import load_raw
    from config.stack_file.reader import read_stack
    from sandbox.nodes import stack_nodes
    from sandbox.stacks import merged_config

    stack_file = read_stack(PROJECT_DIR, args.stack, Path(args.config_file) if args.config_file else None)
    folder = stack_file.path.parent if stack_file.path is not None else PROJECT_DIR
    spec = load_raw(stack_file.raw, args.stack, base_dir=folder)
    nodes = stack_nodes(spec)
    if not nodes:
        print(f"error: stack `{args.stack}` describes no GPU nodes (no `topology`): nothing to fake", file=sys.stderr)
        return FOUND
    stack = sandbox.up(merged_config(stack_file.raw, folder), nodes, _progress)
    tool = "volcano-platform"
    print(f"sandbox of `{args.stack}` runs: {len(nodes)} node(s), kubeconfig {sandbox.kubeconfig}")
    print(f"  {tool} sandbox pulumi --stack {args.stack} up --yes      # the real CLI on {stack.stack}")
    print(f"  kubectl --kubeconfig {sandbox.kubeconfig} get podgroups -A   # what the scheduler did")
    print(f"  {tool} sandbox down --stack {args.stack}")
    return OK


def add_sandbox_command(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    parser = command_parser(
        sub,
        formatter,
        "sandbox",
        "a local cluster of a stack's shape to run `pulumi up` against (Go and the Go module proxy needed)",
        "Start a cluster of local processes (etcd, kube-apiserver, KWOK GPU nodes shaped from the stack's "
        "topology and pools, Volcano's scheduler and controllers, the LWS controller) on 127.0.0.1, kept "
        "running in the background, and a Pulumi stack `<stack>-sandbox` of the project pointed at it, "
        "with Volcano and LWS installed elsewhere and the stack's scheduler policy applied to the real "
        "scheduler. The programs are built from their Go modules the first time (long; cached). `pulumi` runs "
        "the Pulumi CLI built with it on that stack; everything lives under .sandbox/<stack>/.",
        "volcano-platform sandbox up --stack aicloud-a",
        "volcano-platform sandbox pulumi --stack aicloud-a up --yes",
        "volcano-platform sandbox status --stack aicloud-a",
        "volcano-platform sandbox down --stack aicloud-a",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="action")
    for action, summary in (
        ("up", "start the sandbox (or find it running) and (re)write its Pulumi stack"),
        ("down", "stop the sandbox's processes"),
        ("status", "whether the sandbox runs (exit 1 when not)"),
        ("pulumi", "run the Pulumi CLI on the sandbox's stack: `sandbox pulumi --stack <s> up --yes`"),
    ):
        command = actions.add_parser(action, help=summary, description=summary)
        command.add_argument("--stack", required=True, help=STACK_HELP)
        if action == "up":
            command.add_argument("--config-file", help=CONFIG_FILE_HELP)
        if action == "pulumi":
            command.add_argument("pulumi_args", nargs=argparse.REMAINDER, help="the CLI's arguments")
        command.set_defaults(handler=cmd_sandbox)
