"""`preflight` and `import-topology`: the subcommands that read a live cluster.

Both read a cluster with GET and LIST only (or a recorded `List` given with `--from`) and never
write to it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.exit import FOUND, OK, UsageError, stack_name
from cli.render_commands import CONFIG_FILE_HELP, STACK_HELP, render_stack_of
from live.cluster_state import DUMP_COMMAND, ClusterState, read_cluster, read_file

FROM_HELP = f"read the cluster from this JSON or YAML List instead of the API server; write it with `{DUMP_COMMAND}`"


def _state(args: argparse.Namespace, context: str | None) -> ClusterState:
    if args.from_file:
        return read_file(Path(args.from_file))
    return read_cluster(args.kubeconfig, args.context or context)


def cmd_preflight(args: argparse.Namespace) -> int:
    from live.preflight import preflight
    from live.preflight.report import as_json, markdown

    result = render_stack_of(args)
    state = _state(args, result.spec.config.cluster.context)
    report = preflight(result.spec, result.rendered, state)
    print(as_json(report) if args.json else markdown(report), end="")
    return FOUND if report.findings else OK


def cmd_import_topology(args: argparse.Namespace) -> int:
    from components.kubernetes.yaml_text import dump
    from config import PROJECT
    from live.topology_import import import_topology

    tiers: list[str] = [t.strip() for t in args.tiers.split(",") if t.strip()] if args.tiers else []
    resource = args.resource
    context = None
    if args.stack:
        spec = render_stack_of(args).spec
        tiers = tiers or list(spec.config.topology.tiers if spec.config.topology else ())
        resource = resource or spec.gpu_resource
        context = spec.config.cluster.context
    if not tiers:
        raise UsageError("give the tier label keys with --tiers (tier 1 first), or a --stack that has them")
    state = _state(args, context)
    imported = import_topology(state.nodes, tiers, resource or "nvidia.com/gpu")
    section: dict[str, Any] = {f"{PROJECT}:topology": imported.section}
    print(dump({"config": section}), end="")
    for name in imported.unplaced:
        print(f"warning: node {name} has the accelerator but not every tier label; it is left out", file=sys.stderr)
    for problem in imported.problems:
        print(f"error: {problem}", file=sys.stderr)
    return FOUND if imported.problems else OK


def _cluster_arguments(parser: argparse.ArgumentParser, context_default: str) -> None:
    parser.add_argument("--from", dest="from_file", metavar="FILE", help=FROM_HELP)
    parser.add_argument("--kubeconfig", help="kubeconfig file to read the cluster with (default: the ambient one)")
    parser.add_argument("--context", help=f"kubeconfig context (default: {context_default})")


def add_cluster_commands(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    preflight = sub.add_parser(
        "preflight",
        help="compare a stack with what a live cluster (or a recorded List) already has; read-only",
        description="Render the stack, read the cluster (GET and LIST only, or --from a file) and report what "
        "`pulumi up` would meet: missing nodes, accelerator counts, label changes, taints, existing objects, "
        "installs, full queues. Exit 0 nothing found, 1 findings, 2 invalid config or unreadable input.",
        epilog="examples:\n  volcano-platform preflight --stack aicloud-a\n"
        "  volcano-platform preflight --stack aicloud-a --from cluster.json --json",
        formatter_class=formatter,
    )
    preflight.add_argument("--stack", type=stack_name, required=True, help=STACK_HELP)
    preflight.add_argument("--config-file", help=CONFIG_FILE_HELP)
    _cluster_arguments(preflight, "`cluster.context`, else the current one")
    preflight.add_argument("--json", action="store_true", help="print the report as JSON instead of Markdown")
    preflight.set_defaults(handler=cmd_preflight)
    topology = sub.add_parser(
        "import-topology",
        help="print a stack's `topology` section from the tier labels the cluster's nodes carry; read-only",
        description="Read the nodes (live, or --from a file) and write the topology section: one domain per "
        "label value, leaves with their nodes as compact ranges (zero-padding preserved). Exit 1 when the labels "
        "do not form a tree.",
        epilog="examples:\n"
        "  volcano-platform import-topology --tiers topology.example.com/leaf,topology.example.com/spine\n"
        "  volcano-platform import-topology --stack aicloud-a --from cluster.json",
        formatter_class=formatter,
    )
    topology.add_argument("--tiers", help="tier label keys, tier 1 (leaf) first, comma-separated")
    topology.add_argument(
        "--stack", type=stack_name, help=STACK_HELP + "; gives the tiers, accelerator and context if not set"
    )
    topology.add_argument("--config-file", help=CONFIG_FILE_HELP)
    topology.add_argument("--resource", help="accelerator resource to count per node (default: the stack's)")
    _cluster_arguments(topology, "the current one")
    topology.set_defaults(handler=cmd_import_topology)
