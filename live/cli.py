"""Command line of the live-cluster reads: `preflight` and `import-topology`.

Both read a cluster with GET and LIST only (or a recorded `List` given with `--from`) and never
write to it. They are subcommands of `python -m offline` and of `python -m live`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from live.cluster_state import DUMP_COMMAND, ClusterState, StateError, read_cluster, read_file

PROJECT_DIR = Path(__file__).resolve().parent.parent
FROM_HELP = f"read the cluster from this JSON or YAML List instead of the API server; write it with `{DUMP_COMMAND}`"


def _state(args: argparse.Namespace, context: str | None) -> ClusterState:
    if args.from_file:
        return read_file(Path(args.from_file))
    return read_cluster(args.kubeconfig, args.context or context)


def cmd_preflight(args: argparse.Namespace) -> int:
    from live.preflight import as_json, markdown, preflight
    from offline.render import render_stack

    result = render_stack(PROJECT_DIR, args.stack, Path(args.config_file) if args.config_file else None)
    try:
        state = _state(args, result.spec.config.cluster.context)
    except StateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report = preflight(result.spec, result.rendered, state)
    print(as_json(report) if args.json else markdown(report), end="")
    return 1 if report.findings else 0


def cmd_import_topology(args: argparse.Namespace) -> int:
    from components.yaml_text import dump
    from config import PROJECT
    from live.topology_import import import_topology

    tiers: list[str] = [t.strip() for t in args.tiers.split(",") if t.strip()] if args.tiers else []
    resource = args.resource
    context = None
    if args.stack:
        from offline.render import render_stack

        spec = render_stack(PROJECT_DIR, args.stack, Path(args.config_file) if args.config_file else None).spec
        tiers = tiers or list(spec.config.topology.tiers if spec.config.topology else ())
        resource = resource or spec.gpu_resource
        context = spec.config.cluster.context
    if not tiers:
        print(
            "error: give the tier label keys with --tiers (tier 1 first), or a --stack that has them", file=sys.stderr
        )
        return 2
    try:
        state = _state(args, context)
    except StateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    imported = import_topology(state.nodes, tiers, resource or "nvidia.com/gpu")
    section: dict[str, Any] = {f"{PROJECT}:topology": imported.section}
    print(dump({"config": section}), end="")
    for name in imported.unplaced:
        print(f"warning: node {name} has the accelerator but not every tier label; it is left out", file=sys.stderr)
    for problem in imported.problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if imported.problems else 0


def add_commands(sub: Any, stack_help: str, config_file_help: str) -> None:
    preflight = sub.add_parser(
        "preflight",
        help="compare a stack with what a live cluster (or a recorded List) already has; read-only",
        description="Render the stack, read the cluster (GET and LIST only, or --from a file) and report what "
        "`pulumi up` would meet: missing nodes, accelerator counts, label changes, taints, existing objects, "
        "installs, full queues. Exit 0 nothing found, 1 findings, 2 invalid config or unreadable input.",
    )
    preflight.add_argument("--stack", required=True, help=stack_help)
    preflight.add_argument("--config-file", help=config_file_help)
    preflight.add_argument("--from", dest="from_file", metavar="FILE", help=FROM_HELP)
    preflight.add_argument("--kubeconfig", help="kubeconfig file to read the cluster with (default: the ambient one)")
    preflight.add_argument("--context", help="kubeconfig context (default: `cluster.context`, else the current one)")
    preflight.add_argument("--json", action="store_true", help="print the report as JSON instead of Markdown")
    preflight.set_defaults(handler=cmd_preflight)
    topology = sub.add_parser(
        "import-topology",
        help="print a stack's `topology` section from the tier labels the cluster's nodes carry; read-only",
        description="Read the nodes (live, or --from a file) and write the topology section: one domain per "
        "label value, leaves with their nodes as compact ranges (zero-padding preserved). Exit 1 when the labels "
        "do not form a tree.",
    )
    topology.add_argument("--tiers", help="tier label keys, tier 1 (leaf) first, comma-separated")
    topology.add_argument("--stack", help=stack_help + "; gives the tiers, accelerator and context if not set")
    topology.add_argument("--config-file", help=config_file_help)
    topology.add_argument("--resource", help="accelerator resource to count per node (default: the stack's)")
    topology.add_argument("--from", dest="from_file", metavar="FILE", help=FROM_HELP)
    topology.add_argument("--kubeconfig", help="kubeconfig file to read the cluster with (default: the ambient one)")
    topology.add_argument("--context", help="kubeconfig context (default: the current one)")
    topology.set_defaults(handler=cmd_import_topology)
