"""`preflight`, `whatif`, `explain`, `import-topology` and `preview-role`: the subcommands about a
live cluster.

The first four read a cluster with GET and LIST only (or a recorded `List` given with `--from`) and
never write to it; `preview-role` prints the RBAC objects that allow exactly those reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cli.exit import FOUND, OK, UsageError, stack_name
from cli.prediction import (
    FROM_HELP,
    cluster_state,
    engine_argument,
    lose_argument,
    predict_for,
    predict_loss,
    predict_upgrade,
    upgrade_argument,
)
from cli.render_commands import CONFIG_FILE_HELP, STACK_HELP, command_parser, render_stack_of
from config.upstream.cloud_topology import PRESET_NAMES

TOOL_NAME = "volcano-platform"


def cmd_preflight(args: argparse.Namespace) -> int:
    from live.preflight import preflight
    from live.preflight.report import as_json, markdown

    result = render_stack_of(args)
    state = cluster_state(args, result.spec.config.cluster.context)
    report = preflight(result.spec, result.rendered, state)
    print(as_json(report) if args.json else markdown(report), end="")
    return FOUND if report.findings else OK


def cmd_import_topology(args: argparse.Namespace) -> int:
    from config.upstream.cloud_topology import PRESETS
    from live.topology_import import import_topology

    tiers: list[str] = [t.strip() for t in args.tiers.split(",") if t.strip()] if args.tiers else []
    preset = args.preset
    if preset and not tiers:
        tiers = list(PRESETS[preset].tiers)
    resource = args.resource
    context = None
    hyper_nodes = "discovery"
    spec = None
    if args.stack:
        spec = render_stack_of(args).spec
        topology = spec.config.topology
        preset = preset or (topology.preset if topology else None)
        tiers = tiers or list(topology.tiers if topology else ())
        hyper_nodes = topology.hyper_nodes if topology else hyper_nodes
        resource = resource or spec.gpu_resource
        context = spec.config.cluster.context
    if args.pools or (spec is not None and spec.pools):
        return _import_pools(args, spec, tiers, preset, hyper_nodes, resource or "nvidia.com/gpu", context)
    if not tiers:
        raise UsageError("give the tier label keys with --tiers (tier 1 first), or a --stack that has them")
    state = cluster_state(args, context)
    imported = import_topology(state.nodes, tiers, resource or "nvidia.com/gpu")
    section = {"tiers": imported.section["tiers"], "hyperNodes": hyper_nodes, **imported.section}
    if args.json:
        report = {"schemaVersion": 1, "topology": section, "unplaced": imported.unplaced, "problems": imported.problems}
        print(json.dumps(report, indent=2))
    else:
        _print_sections({"topology": section}, include_form=False)
    for name in imported.unplaced:
        print(f"warning: node {name} has the accelerator but not every tier label; it is left out", file=sys.stderr)
    for problem in imported.problems:
        print(f"error: {problem}", file=sys.stderr)
    return FOUND if imported.problems else OK


def _import_pools(
    args: argparse.Namespace,
    spec: Any,
    tiers: list[str],
    preset: str | None,
    hyper_nodes: str,
    resource: str,
    context: str | None,
) -> int:
    """The pool form: a pool per node group, each fabric by its labels' shape, no node named."""
    from live.pool_import import group_label, import_pools

    state = cluster_state(args, context)
    known = dict(spec.config.pools) if spec is not None else {}
    label = args.pool_label or group_label(state.nodes, resource)
    imported = import_pools(state.nodes, tiers, resource, known, label)
    sections: dict[str, Any] = {"pools": imported.pools}
    if tiers:
        topology: dict[str, Any] = {"preset": preset} if preset else {"tiers": tiers}
        # Labels set by the cloud or a DaemonSet belong to it: the program sets none (a preset implies it).
        sections["topology"] = {
            **topology,
            "hyperNodes": hyper_nodes,
            **({} if preset else {"nodeLabels": {"enabled": False}}),
        }
    if args.json:
        print(json.dumps({"schemaVersion": 1, **sections, "notes": imported.notes}, indent=2))
    else:
        _print_sections(sections, include_form=spec is not None and spec.config.include is not None)
    for note in imported.notes:
        print(f"warning: {note}", file=sys.stderr)
    if label is None and not known:
        print("warning: no node group label found on every accelerator node; give --pool-label", file=sys.stderr)
    return OK


def _print_sections(sections: dict[str, Any], include_form: bool) -> None:
    """As an include file (top-level keys), or indented to paste under `config:` of a stack file."""
    from components.kubernetes.yaml_text import dump
    from config import PROJECT

    if include_form:
        print(dump(sections), end="")
        return
    block = dump({f"{PROJECT}:{key}": value for key, value in sections.items()})
    print("".join(f"  {line}" if line.strip() else line for line in block.splitlines(keepends=True)), end="")


def cmd_whatif(args: argparse.Namespace) -> int:
    from whatif.report import as_json, markdown

    result = render_stack_of(args)
    if args.upgrade:
        from whatif.volcano import upgrade

        answer = predict_upgrade(args, result)
        print(upgrade.as_json(answer) if args.json else upgrade.markdown(answer), end="")
        return OK if answer.unchanged else FOUND
    if args.lose:
        from whatif import loss_report

        loss = predict_loss(args, result)
        print(loss_report.as_json(loss) if args.json else loss_report.markdown(loss), end="")
        return OK if loss.unharmed else FOUND
    prediction = predict_for(args, result)
    print(as_json(prediction) if args.json else markdown(prediction), end="")
    return OK if prediction.all_fit else FOUND


def cmd_explain(args: argparse.Namespace) -> int:
    from whatif.predict import FITS
    from whatif.report import explain_markdown

    result = render_stack_of(args)
    if args.model not in result.spec.models:
        known = ", ".join(sorted(result.spec.models)) or "none"
        raise UsageError(f"stack {args.stack} has no model {args.model!r} (its models: {known})")
    if args.lose:
        from whatif.loss_report import PLACED, PLACED_AGAIN, RUNNING
        from whatif.loss_report import explain_markdown as explain_loss

        loss = predict_loss(args, result)
        print(explain_loss(loss, args.model), end="")
        row = next(m for m in loss.models if m.model == args.model)
        return OK if row.status in (RUNNING, PLACED, PLACED_AGAIN) and not row.after.victims else FOUND
    prediction = predict_for(args, result)
    print(explain_markdown(prediction, args.model), end="")
    verdict = next(v for v in prediction.verdicts if v.model == args.model)
    return OK if verdict.verdict == FITS else FOUND


def cmd_snapshot(args: argparse.Namespace) -> int:
    from live.cluster_snapshot import snapshot_list

    result = render_stack_of(args)
    state = cluster_state(args, result.spec.config.cluster.context)
    recorded = snapshot_list(state)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recorded) + "\n")
    print(f"recorded {len(recorded['items'])} objects of {state.source} -> {out}")
    return OK


def cmd_preview_role(args: argparse.Namespace) -> int:
    from components.kubernetes.yaml_text import dump
    from live.access import DEFAULT_SUBJECT, Subject, preview_access, release_storage

    try:
        subject = Subject.parse(args.subject) if args.subject else DEFAULT_SUBJECT
    except ValueError as error:
        raise UsageError(f"--subject {error}") from None
    render = render_stack_of(args)
    documents = preview_access(render, subject)
    secrets = (
        "Secrets only by the names the stack manages"
        if release_storage(render) == "configmaps" or not render.rendered.releases
        else "Secrets by name, and every Secret of the charts' namespaces (Helm's records; see\n"
        "# `cluster.helmReleaseStorage`)"
    )
    print(
        f"# Read-only access of the preview identity of stack `{args.stack}`, written by\n"
        f"# `{TOOL_NAME} preview-role --stack {args.stack}`: get and list on what `pulumi preview --refresh`,\n"
        f"# `{TOOL_NAME} preflight` and `{TOOL_NAME} whatif` read, {secrets}, no\n"
        "# `*`, no subresources, no watch, no writes (previews then diff client-side). Apply it after the first\n"
        "# `pulumi up` (the Roles need the stack's namespaces) and again when the stack gains a kind or a\n"
        "# namespace; the preview workflow's KUBECONFIG_<STACK> is a kubeconfig of the subject bound here."
    )
    print("---\n".join(dump(document) for document in documents), end="")
    return OK


def _cluster_arguments(parser: argparse.ArgumentParser, context_default: str) -> None:
    parser.add_argument("--from", dest="from_file", metavar="FILE", help=FROM_HELP)
    parser.add_argument("--kubeconfig", help="kubeconfig file to read the cluster with (default: the ambient one)")
    parser.add_argument("--context", help=f"kubeconfig context (default: {context_default})")


def _stack_on_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """A stack compared with a cluster: `--stack`, `--config-file` and where the cluster is read."""
    parser.add_argument("--stack", type=stack_name, required=True, help=STACK_HELP)
    parser.add_argument("--config-file", help=CONFIG_FILE_HELP)
    _cluster_arguments(parser, "`cluster.context`, else the current one")


def add_cluster_commands(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    preflight = command_parser(
        sub,
        formatter,
        "preflight",
        "compare a stack with what a live cluster (or a recorded List) already has; read-only",
        "Render the stack, read the cluster (GET and LIST only, or --from a file) and report what "
        "`pulumi up` would meet: missing nodes, accelerator counts, label changes, taints, existing objects, "
        "installs, full queues. Exit 0 nothing found, 1 findings, 2 invalid config or unreadable input.",
        "volcano-platform preflight --stack aicloud-a",
        "volcano-platform preflight --stack aicloud-a --from cluster.json --json",
    )
    _stack_on_cluster_arguments(preflight)
    preflight.add_argument("--json", action="store_true", help="print the report as JSON instead of Markdown")
    preflight.set_defaults(handler=cmd_preflight)
    topology = command_parser(
        sub,
        formatter,
        "import-topology",
        "print a stack's `topology` section from the tier labels the cluster's nodes carry; read-only",
        "Read the nodes (live, or --from a file) and write the topology section: one domain per "
        "label value, leaves with their nodes as compact ranges (zero-padding preserved). Exit 1 when the labels "
        "do not form a tree.",
        "volcano-platform import-topology --tiers topology.example.com/leaf,topology.example.com/spine",
        "volcano-platform import-topology --stack aicloud-a --from cluster.json",
    )
    topology.add_argument("--tiers", help="tier label keys, tier 1 (leaf) first, comma-separated")
    topology.add_argument(
        "--preset",
        choices=sorted(PRESET_NAMES),
        help="the tiers of a cloud's or tool's standard labels (`topology.preset`)",
    )
    topology.add_argument(
        "--pools",
        action="store_true",
        help="write `pools` (one per node group, each fabric by its labels' shape, no node named) and `topology`; "
        "the default when the --stack has pools",
    )
    topology.add_argument(
        "--pool-label",
        help="the node label that names a node's group (default: the first of eks.amazonaws.com/nodegroup, "
        "karpenter.sh/nodepool, cloud.google.com/gke-nodepool, ... that every accelerator node carries)",
    )
    topology.add_argument(
        "--stack", type=stack_name, help=STACK_HELP + "; gives the tiers, accelerator and context if not set"
    )
    topology.add_argument("--config-file", help=CONFIG_FILE_HELP)
    topology.add_argument("--resource", help="accelerator resource to count per node (default: the stack's)")
    topology.add_argument(
        "--json", action="store_true", help="print the section, the nodes left out and the problems as JSON"
    )
    _cluster_arguments(topology, "the current one")
    topology.set_defaults(handler=cmd_import_topology)
    whatif = command_parser(
        sub,
        formatter,
        "whatif",
        "predict what the scheduler does with the stack on the cluster as it is; read-only",
        "Render the stack, read the cluster (GET and LIST only, or --from a file) and simulate the "
        "scheduler's next cycles with the stack's policy: for every model `fits` (and where), `fits-after-eviction` "
        "(the PodGroups preempted or reclaimed for it), `waits` or `never`, with the reason in stack keys; for "
        "every tenant the running work a quota change exposes. Volcano's own scheduling code answers (built from "
        "its Go module on first use); without Go the project's model of it does, and the report says which. "
        "Exit 0 every model fits without eviction, 1 something is evicted, waits or never runs.",
        "volcano-platform whatif --stack aicloud-a",
        "volcano-platform whatif --stack aicloud-a --from cluster.json --json",
        "volcano-platform whatif --stack aicloud-a --from cluster.json --lose domain=leaf-3",
        "volcano-platform whatif --stack aicloud-a --from cluster.json --upgrade volcano=v1.15.1",
    )
    _stack_on_cluster_arguments(whatif)
    engine_argument(whatif)
    lose_argument(whatif)
    upgrade_argument(whatif)
    whatif.add_argument("--json", action="store_true", help="print the prediction as JSON (schema/whatif.schema.json)")
    whatif.set_defaults(handler=cmd_whatif)
    explain = command_parser(
        sub,
        formatter,
        "explain",
        "say why a model is Pending or short of replicas, in numbers and stack keys; read-only",
        "Like whatif, for one model: the dominant reason it does not run (the queue at its capability, "
        "no domain with enough free nodes, a priority that cannot preempt, queues that may not be reclaimed) and "
        "the stack key that would change it. Exit 0 when it runs, 1 when it does not.",
        "volcano-platform explain qwen2-72b-tenanta --stack aicloud-a --from cluster.json",
    )
    explain.add_argument("model", help="the model's name (a key of `models`)")
    _stack_on_cluster_arguments(explain)
    engine_argument(explain)
    lose_argument(explain)
    explain.set_defaults(handler=cmd_explain)
    snapshot = command_parser(
        sub,
        formatter,
        "snapshot",
        "record the cluster the what-if reads, for pull requests to read without credentials; read-only",
        "Read the cluster as whatif does (GET and LIST only) and write it as a Kubernetes List that "
        "`whatif --from` and `diff --from` read. Container commands, arguments and environment, field managers "
        "and the last-applied annotation are left out: the file is kept as a workflow artifact, readable by "
        "whoever can read the repository.",
        "volcano-platform snapshot --stack aicloud-a --out snapshot/aicloud-a.json",
    )
    _stack_on_cluster_arguments(snapshot)
    snapshot.add_argument("--out", required=True, help="the file to write")
    snapshot.set_defaults(handler=cmd_snapshot)
    role = command_parser(
        sub,
        formatter,
        "preview-role",
        "print the RBAC objects of a read-only preview identity for a stack",
        "Render the stack and print a ClusterRole, Roles in the stack's namespaces and their bindings "
        "that allow exactly what `pulumi preview --refresh` and `preflight` read: get and list on the kinds the "
        "stack manages and the preflight reads, Secrets only in the stack's namespaces, no `*`, no subresources, "
        "no watch and no writes. Apply it (again whenever the stack gains a kind or a namespace) and give the "
        "preview workflow a kubeconfig of the subject.",
        "volcano-platform preview-role --stack aicloud-a | kubectl apply -f -",
        "volcano-platform preview-role --stack aicloud-a --subject Group:platform-previewers",
    )
    role.add_argument("--stack", type=stack_name, required=True, help=STACK_HELP)
    role.add_argument("--config-file", help=CONFIG_FILE_HELP)
    role.add_argument(
        "--subject",
        help="who the bindings name: ServiceAccount:<namespace>/<name> (default: "
        "ServiceAccount:kube-system/volcano-platform-preview, created too), User:<name> or Group:<name>",
    )
    role.set_defaults(handler=cmd_preview_role)
