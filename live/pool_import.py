"""The `pools` section of a stack, written from the labels a cloud cluster's nodes carry.

A cloud cluster's nodes come and go by node group; their names are the cloud's. So each pool is
written by what stays when an instance is replaced: the node group label that selects it, the
accelerator its nodes offer (count, product), the taints they carry and, on a fabric, the shape of
its tier labels (domains per tier, nodes per domain). No node is named.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from config.sections.pools import PoolConfig
from config.upstream.accelerators import product_of, type_of

GROUP_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "oci.oraclecloud.com/node-pool-id",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
"""Labels that name a node's group, tried in order when none is given: EKS managed node groups,
Karpenter node pools, GKE node pools, OKE node pools, AKS agent pools, else the instance type."""


@dataclass
class ImportedPools:
    pools: dict[str, Any] = field(default_factory=dict)
    """The value of `volcano-platform:pools`."""
    notes: list[str] = field(default_factory=list)
    """What a person should check (a shape that is not regular, a pool without every tier label)."""


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()}


def _count(node: dict[str, Any], resource: str) -> int:
    value = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    try:
        return int(Decimal(str(value))) if value is not None else 0
    except InvalidOperation:
        return 0


def group_label(nodes: list[dict[str, Any]], resource: str) -> str | None:
    """The first of `GROUP_LABELS` every accelerator node carries."""
    accelerated = [_labels(n) for n in nodes if _count(n, resource)]
    return next((key for key in GROUP_LABELS if accelerated and all(key in labels for labels in accelerated)), None)


def import_pools(
    nodes: list[dict[str, Any]],
    tiers: list[str],
    resource: str,
    known: dict[str, PoolConfig],
    label: str | None,
) -> ImportedPools:
    """Pools the stack has (`known`, selected by their selectors) plus one per value of `label` for
    accelerator nodes in none of them. A pool the stack scales between bounds keeps its bounds and,
    while its labels fit inside it, its declared shape: a part-grown pool is its normal state."""
    result = ImportedPools()
    groups: dict[str, tuple[dict[str, str], list[dict[str, Any]]]] = {}
    for name, pool in known.items():
        selector = dict(pool.selector)
        groups[name] = (selector, [n for n in nodes if all(_labels(n).get(k) == v for k, v in selector.items())])
    placed = {id(n) for _, members in groups.values() for n in members}
    if label is not None:
        for node in nodes:
            value = _labels(node).get(label)
            if id(node) in placed or not _count(node, resource) or value is None:
                continue
            groups.setdefault(value, ({label: value}, []))[1].append(node)
    for name, (selector, members) in groups.items():
        result.pools[name] = _pool(name, selector, members, tiers, resource, known.get(name), result.notes)
    return result


def _pool(
    name: str,
    selector: dict[str, str],
    members: list[dict[str, Any]],
    tiers: list[str],
    resource: str,
    declared: PoolConfig | None,
    notes: list[str],
) -> dict[str, Any]:
    pool: dict[str, Any] = {"selector": selector}
    counts = Counter(_count(n, resource) for n in members)
    if counts and counts.most_common(1)[0][0]:
        accelerator: dict[str, Any] = {"count": counts.most_common(1)[0][0]}
        if resource != "nvidia.com/gpu":
            accelerator["resource"] = resource
        products = Counter(found[1] for n in members if (found := product_of(_labels(n))))
        if products:
            accelerator["product"] = products.most_common(1)[0][0]
        if declared is not None and declared.accelerator is not None and declared.accelerator.type:
            accelerator["type"] = declared.accelerator.type  # the stack's name for the type, not a label
        elif declared is None and products and (short := type_of(accelerator["product"])):
            accelerator["type"] = short  # a new pool: pools of one product share quotas per type
        pool["accelerator"] = accelerator
    taints = _common_taints(members)
    if taints:
        pool["taints"] = taints
    shape = _shape(name, members, tiers, notes) if tiers else None
    scaled = declared is not None and declared.autoscaled
    if scaled:
        assert declared is not None
        pool["minNodes"], pool["maxNodes"] = declared.min_nodes, declared.max_nodes
        own = declared.topology
        if own is not None and own.shaped and (shape is None or _within(shape, own.domains, own.nodes_per_domain)):
            shape = {"domains": list(own.domains), "nodesPerDomain": own.nodes_per_domain}
    if shape is not None:
        pool["topology"] = shape
        total = shape["domains"][0] * shape["nodesPerDomain"]
        if not scaled and total != len(members):
            notes.append(f"pool `{name}`: {len(members)} node(s) in a shape of {total}; its domains are not all full")
    elif not scaled:
        pool["nodes"] = len(members)
    return pool


def _within(shape: dict[str, Any], domains: tuple[int, ...], per_domain: int | None) -> bool:
    seen = shape["domains"]
    return (
        len(seen) == len(domains)
        and all(a <= b for a, b in zip(seen, domains, strict=True))
        and per_domain is not None
        and shape["nodesPerDomain"] <= per_domain
    )


def _common_taints(members: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Taints every node of the pool carries (NoSchedule and NoExecute: what keeps pods off)."""
    common: set[tuple[str, str, str]] | None = None
    for node in members:
        own = {
            (str(t.get("key")), str(t.get("value", "")), str(t.get("effect")))
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("effect") in ("NoSchedule", "NoExecute")
        }
        common = own if common is None else common & own
    return [
        {"key": key, **({"value": value} if value else {}), "effect": effect}
        for key, value, effect in sorted(common or ())
    ]


def _shape(name: str, members: list[dict[str, Any]], tiers: list[str], notes: list[str]) -> dict[str, Any] | None:
    """Domains per tier and nodes per tier-1 domain, when every node carries every tier label."""
    if not members:
        return None
    labelled = [_labels(n) for n in members]
    if not all(all(labels.get(key) for key in tiers) for labels in labelled):
        if any(any(labels.get(key) for key in tiers) for labels in labelled):
            notes.append(f"pool `{name}`: some nodes lack a tier label; the pool is written outside the fabric")
        return None
    domains = [len({labels[key] for labels in labelled}) for key in tiers]
    per_leaf = Counter(labels[tiers[0]] for labels in labelled)
    nodes_per_domain = max(per_leaf.values())
    if len(set(per_leaf.values())) > 1:
        notes.append(
            f"pool `{name}`: its tier-1 domains hold {min(per_leaf.values())} to {nodes_per_domain} nodes; "
            f"written as {nodes_per_domain} each (preflight lists the short ones)"
        )
    for tier in range(1, len(tiers)):
        if domains[tier - 1] % domains[tier]:
            notes.append(
                f"pool `{name}`: {domains[tier - 1]} tier-{tier} domains under {domains[tier]} tier-{tier + 1} "
                "domain(s) is not a regular tree; describe it by name in `topology.domains` instead"
            )
            return None
    return {"domains": domains, "nodesPerDomain": nodes_per_domain}
