"""Preflight of the nodes: configured nodes that do not exist, accelerator counts and resource
names, label changes, and taints that keep a model off every node."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from config.schema.quantity import quantity_value
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report, listed, object_name


def allocatable(node: dict[str, Any], resource: str) -> Decimal:
    value = (node.get("status", {}).get("allocatable") or {}).get(resource)
    return quantity_value(str(value)) if value is not None else Decimal(0)


def _padding_hint(missing: str, existing: set[str]) -> str | None:
    """An existing node that differs from a missing one only in the zero-padding of its number."""
    match = re.match(r"^(.*?)(\d+)(\D*)$", missing)
    if not match:
        return None
    prefix, digits, suffix = match.groups()
    for name in existing:
        other = re.match(rf"^{re.escape(prefix)}(\d+){re.escape(suffix)}$", name)
        if other and int(other.group(1)) == int(digits) and other.group(1) != digits:
            return name
    return None


def _label(node: dict[str, Any], key: str) -> str:
    return str((node["metadata"].get("labels") or {}).get(key, "(unset)"))


def check_nodes(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    resource, words = spec.gpu_resource, spec.accelerator.words
    existing = {object_name(n): n for n in state.nodes}
    offered = sorted({key for n in state.nodes for key in (n.get("status", {}).get("allocatable") or {}) if "/" in key})
    accelerator_nodes = [name for name, n in existing.items() if allocatable(n, resource) > 0]
    if state.nodes and not accelerator_nodes:
        report.add(
            Finding(
                "resource-not-offered",
                "error",
                "cluster.gpuResource",
                f"no node offers `{resource}`: every model would stay Pending and quotas on it limit nothing",
                "set `cluster.gpuResource` to the name the device plugin advertises"
                + (
                    f" (the nodes offer: {', '.join(offered)})" if offered else " (no node offers an extended resource)"
                ),
            )
        )
    topology = spec.topology
    if topology is None:
        report.notes.append(f"{len(accelerator_nodes)} node(s) offer {resource}; the stack describes no topology")
        return
    configured = list(topology.node_gpus)
    missing = [n for n in configured if n not in existing]
    if missing:
        hints = [f"{n} (did you mean {hint}?)" if (hint := _padding_hint(n, set(existing))) else n for n in missing]
        report.add(
            Finding(
                "nodes-missing",
                "error",
                "topology",
                f"{len(missing)} configured node(s) do not exist"
                + (
                    "; their label patches would create bare Node objects"
                    if spec.config.topology is not None and spec.config.topology.node_labels.enabled
                    else ""
                ),
                "fix the names or ranges (zero-padding: `gpu-[001-128]` is not `gpu-[1-128]`), or remove the nodes",
                listed(hints),
            )
        )
    unplaced = [n for n in accelerator_nodes if n not in topology.node_gpus and _in_named_part(spec, existing[n])]
    if unplaced:
        report.add(
            Finding(
                "nodes-unplaced",
                "warning",
                "topology",
                f"{len(unplaced)} node(s) with {words} are in no topology domain: placement checks leave them out",
                "add them to a leaf domain (`volcano-platform import-topology` writes domains from node labels)",
                listed(unplaced),
            )
        )
    mismatched = [
        f"{name}: {format(allocatable(existing[name], resource), 'f')} allocatable, {gpus} configured"
        for name, gpus in topology.node_gpus.items()
        if name in existing and accelerator_nodes and allocatable(existing[name], resource) != gpus
    ]
    if mismatched:
        report.add(
            Finding(
                "gpus-per-node",
                "warning",
                "topology",
                f"{len(mismatched)} node(s) offer a different number of {words} than the stack says; placement "
                "checks count the configured number",
                "correct `gpusPerNode` (cluster, domain or node group), or check the device plugin on those nodes",
                listed(mismatched),
            )
        )
    relabelled = [
        f"{name}: "
        + ", ".join(
            f"{k}={(existing[name]['metadata'].get('labels') or {}).get(k, '(unset)')}->{v}" for k, v in changes
        )
        for name in configured
        if name in existing
        and (
            changes := [
                (k, v)
                for k, v in topology.labels_of(name).items()
                if (existing[name]["metadata"].get("labels") or {}).get(k) != v
            ]
        )
    ]
    owned = spec.config.topology is not None and spec.config.topology.node_labels.enabled
    if relabelled and not owned:
        report.add(
            Finding(
                "labels-disagree",
                "error",
                "topology",
                f"{len(relabelled)} node(s) carry topology labels other than the stack's tree says (the stack does not "
                "label nodes: `topology.nodeLabels.enabled: false`); Volcano places gangs by the labels the nodes "
                "carry, so the placement checks describe another cluster",
                "fix the labels where they are set (node pool, kubelet `--node-labels`, the discovery agent), or "
                "write the tree from the cluster with `volcano-platform import-topology`",
                listed(relabelled),
            )
        )
    if relabelled and owned:
        report.add(
            Finding(
                "labels-change",
                "warning",
                "topology",
                f"the node patches would change the topology labels of {len(relabelled)} node(s); HyperNodes follow "
                "the labels, so running gangs may be regrouped",
                "review the list; if the cluster's labels are right, import them with `import-topology`",
                listed(relabelled),
            )
        )


def _in_named_part(spec: PlatformSpec, node: dict[str, Any]) -> bool:
    """Whether the node belongs where the stack names its nodes: anywhere without pools, else in a
    pool whose fabric is `topology.domains` (other pools are checked by their labels' shape)."""
    if not spec.pools:
        return True
    labels = node.get("metadata", {}).get("labels") or {}
    return any(
        pool.config.topology is not None
        and bool(pool.config.topology.named)
        and all(labels.get(k) == v for k, v in pool.config.selector.items())
        for pool in spec.pools.values()
    )


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration.get("key") == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value") == taint.get("value"):
            return True
    return False


def _candidates(spec: PlatformSpec, model: ModelSpec, state: ClusterState) -> list[dict[str, Any]]:
    """Nodes the model's pods could use: topology nodes (or nodes with the accelerator; with pools,
    the nodes of its pools) matching its node selector and node-affinity terms."""
    selector = model.node_selector
    names = set(spec.topology.node_gpus) if spec.topology and not spec.pools else None
    out = []
    for node in state.nodes:
        labels = node.get("metadata", {}).get("labels") or {}
        if names is not None and object_name(node) not in names:
            continue
        if names is None and model.gpus_per_pod and allocatable(node, model.gpu_resource) == 0:
            continue
        if model.pools is not None and not any(
            all(labels.get(k) == v for k, v in spec.pools[p].config.selector.items()) for p in model.pools
        ):
            continue
        terms = model.node_affinity_terms
        if all(labels.get(k) == v for k, v in selector.items()) and (
            not terms or any(all(labels.get(k) == v for k, v in term.items()) for term in terms)
        ):
            out.append(node)
    return out


def check_taints(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    for model in spec.models.values():
        candidates = _candidates(spec, model, state)
        if not candidates:
            continue
        tolerations = [dict(t) for t in model.tolerations]
        blocking: dict[str, int] = {}
        schedulable = 0
        for node in candidates:
            untolerated = [
                t
                for t in node.get("spec", {}).get("taints") or []
                if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
            ]
            if not untolerated:
                schedulable += 1
            for taint in untolerated:
                text = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
                blocking[text] = blocking.get(text, 0) + 1
        if schedulable == 0:
            report.add(
                Finding(
                    "taints",
                    "error",
                    f"models.{model.name}.tolerations",
                    f"every node model `{model.name}` could use has a taint it does not tolerate, so it can never "
                    "schedule",
                    "add tolerations for these taints, or remove the taints from the GPU nodes",
                    listed([f"{taint} on {count} node(s)" for taint, count in sorted(blocking.items())]),
                )
            )
