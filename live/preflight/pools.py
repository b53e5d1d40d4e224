"""Preflight of the node pools: which nodes each pool's selector finds, whether they offer what the
pool says, and whether the labels of a pool on a fabric have the shape it declares.

Nothing here compares instance names: a pool's nodes are whatever its selector finds and its
domains are whatever the tier labels say, so an instance replaced by another with the same labels
changes no finding. Domains are named by their label value, the way Volcano's label discovery
groups nodes (`pkg/controllers/hypernode/discovery/label/label.go`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from difflib import get_close_matches
from typing import Any

from config.spec.platform import PlatformSpec
from config.spec.pools import Pool
from config.upstream.accelerators import product_of
from config.upstream.cloud_topology import PRESETS, node_group_example
from live.cluster_state import ClusterState
from live.preflight.nodes import allocatable
from live.preflight.report import Finding, Report, listed, object_name
from offline.markdown import code


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def members(pool: Pool, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes the pool's selector finds."""
    selector = pool.config.selector
    return [n for n in nodes if all(_labels(n).get(k) == v for k, v in selector.items())]


def check_pools(spec: PlatformSpec, state: ClusterState, report: Report) -> None:
    if not spec.pools:
        return
    found = {name: members(pool, state.nodes) for name, pool in spec.pools.items()}
    preset = spec.config.topology.preset if spec.config.topology is not None else None
    _overlaps(found, preset, report)
    _outside(spec, state, found, report)
    for name, pool in spec.pools.items():
        nodes = found[name]
        if not nodes and _selects_nothing(name, pool, state.nodes, report):
            continue
        _size(name, pool, nodes, report)
        _devices(spec, name, pool, nodes, report)
        _taints(name, pool, nodes, report)
        if spec.topology is not None and pool.config.topology is not None and pool.config.topology.shaped:
            _shape(name, pool, nodes, spec.topology.tiers, _setter(preset), report)
    report.notes.append("pools: " + ", ".join(f"{name} {len(nodes)} node(s)" for name, nodes in found.items()))


def _overlaps(found: dict[str, list[dict[str, Any]]], preset: str | None, report: Report) -> None:
    pools_of: dict[str, list[str]] = defaultdict(list)
    for name, nodes in found.items():
        for node in nodes:
            pools_of[object_name(node)].append(name)
    shared = [f"{node}: {', '.join(names)}" for node, names in sorted(pools_of.items()) if len(names) > 1]
    if shared:
        report.add(
            Finding(
                "pool-overlap",
                "error",
                "pools",
                f"{len(shared)} node(s) carry the selector labels of more than one pool: placement counts them twice",
                f"give each pool a selector label only its nodes carry, e.g. {node_group_example(preset)}",
                listed(shared),
            )
        )


def _outside(spec: PlatformSpec, state: ClusterState, found: dict[str, list[dict[str, Any]]], report: Report) -> None:
    inside = {object_name(n) for nodes in found.values() for n in nodes}
    resources = {pool.resource for pool in spec.pools.values()} | {spec.gpu_resource}
    stray = sorted(
        object_name(n)
        for n in state.nodes
        if object_name(n) not in inside and any(allocatable(n, r) > 0 for r in resources)
    )
    if stray:
        report.add(
            Finding(
                "nodes-outside-pools",
                "warning",
                "pools",
                f"{len(stray)} node(s) with {spec.accelerator.words} belong to no pool: placement checks leave them "
                "out, and models with pools never run on them",
                "add their node group to a pool (`pools.<pool>.selector`), or declare a pool for them "
                "(`volcano-platform import-topology` writes pools from the nodes' labels)",
                listed(stray),
            )
        )


def _selects_nothing(name: str, pool: Pool, nodes: list[dict[str, Any]], report: Report) -> bool:
    """A pool whose selector finds no node while nodes carry a label close to it: an error naming the
    label the selector most likely meant. Without such a label, a warning where the pool should have
    nodes now (a fixed size, an autoscaled minimum above 0: the node group may be empty for now);
    nothing for a pool scaled to nothing. Returns whether it was reported."""
    cfg = pool.config
    expected = cfg.min_nodes if cfg.autoscaled else cfg.largest
    hints = _selector_hints(dict(cfg.selector), nodes)
    if not expected and not hints:
        return False
    report.add(
        Finding(
            "pool-selects-nothing",
            "error" if hints else "warning",
            f"pools.{name}.selector",
            f"no node carries every label of pool {code(name)}'s selector"
            + (f", which should find {expected} node(s) now" if expected else ""),
            "; ".join(hints) if hints else "set the selector to the labels the pool's node group puts on its nodes",
        )
    )
    return True


def _selector_hints(selector: dict[str, str], nodes: list[dict[str, Any]]) -> list[str]:
    """`did you mean` for each selector label no node carries: a value the nodes give that key, or a
    key the nodes carry, closest to what was written."""
    values: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        for key, value in _labels(node).items():
            values[str(key)].add(str(value))
    hints = []
    for key, value in selector.items():
        if value in values.get(key, ()):
            continue
        if key in values:
            close = get_close_matches(value, sorted(values[key]), n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean {code(f'{key}: {close[0]}')}?")
            continue
        close = get_close_matches(key, sorted(values), n=1, cutoff=0.8)
        if close and value in values[close[0]]:
            hints.append(f"did you mean {code(f'{close[0]}: {value}')}?")
    return hints


def _size(name: str, pool: Pool, nodes: list[dict[str, Any]], report: Report) -> None:
    cfg = pool.config
    count = len(nodes)
    if cfg.autoscaled:
        assert cfg.min_nodes is not None and cfg.max_nodes is not None
        if cfg.min_nodes <= count <= cfg.max_nodes:
            return
        text = f"pool `{name}` has {count} node(s), outside its bounds {cfg.min_nodes}..{cfg.max_nodes}"
        fix = "set `minNodes`/`maxNodes` to the node group's bounds as its autoscaler has them"
    else:
        expected = cfg.largest
        if expected is None or count == expected:
            return
        text = f"pool `{name}` has {count} node(s), the stack says {expected}: placement checks count {expected}"
        fix = "set `nodes` (and the shape) to what the node group has, or check the group's capacity"
    report.add(Finding("pool-size", "warning", f"pools.{name}", text, fix))


def _devices(spec: PlatformSpec, name: str, pool: Pool, nodes: list[dict[str, Any]], report: Report) -> None:
    wrong = [
        f"{object_name(n)}: {format(allocatable(n, pool.resource), 'f')} allocatable"
        for n in nodes
        if allocatable(n, pool.resource) != pool.gpus_per_node
    ]
    if wrong:
        report.add(
            Finding(
                "pool-accelerators",
                "warning",
                f"pools.{name}.accelerator.count",
                f"{len(wrong)} node(s) of pool `{name}` do not offer {pool.gpus_per_node} `{pool.resource}`; "
                "placement checks count the pool's number",
                "correct `accelerator.count`, or check the device plugin on those nodes",
                listed(wrong),
            )
        )
    product = pool.product
    if product is None:
        return
    other = Counter(
        f"{found[0]}={found[1]}" for n in nodes if (found := product_of(_labels(n))) and found[1] != product
    )
    if other:
        report.add(
            Finding(
                "pool-product",
                "warning",
                f"pools.{name}.accelerator.product",
                f"nodes of pool `{name}` report another GPU product than `{product}`",
                "correct `accelerator.product` to what the nodes' product label says (GPU feature discovery's "
                "`nvidia.com/gpu.product`, or GKE's `cloud.google.com/gke-accelerator`)",
                listed([f"{label} on {count} node(s)" for label, count in sorted(other.items())]),
            )
        )


def _taints(name: str, pool: Pool, nodes: list[dict[str, Any]], report: Report) -> None:
    declared = {(t["key"], t.get("value", ""), t["effect"]) for t in pool.taints}
    undeclared: Counter[str] = Counter()
    for node in nodes:
        for taint in (node.get("spec") or {}).get("taints") or []:
            key = (str(taint.get("key")), str(taint.get("value", "")), str(taint.get("effect")))
            if key[2] in ("NoSchedule", "NoExecute") and key not in declared:
                undeclared[f"{key[0]}={key[1]}:{key[2]}"] += 1
    if undeclared:
        report.add(
            Finding(
                "pool-taints",
                "warning",
                f"pools.{name}.taints",
                f"nodes of pool `{name}` carry taints the pool does not declare: models on the pool do not tolerate "
                "them and stay off those nodes",
                "add the taints to `pools.<pool>.taints` (models on the pool then tolerate them)",
                listed([f"{taint} on {count} node(s)" for taint, count in sorted(undeclared.items())]),
            )
        )


def _setter(preset: str | None) -> str:
    """Who writes the tier labels, in the words of the stack's cloud or tool."""
    return PRESETS[preset].set_by if preset in PRESETS else "the tool or provisioner that labels the nodes"


def _shape(
    name: str, pool: Pool, nodes: list[dict[str, Any]], tiers: tuple[str, ...], setter: str, report: Report
) -> None:
    """A node missing a tier label, a domain with fewer nodes than declared, a tier with more
    domains than declared: each said by label values, never by instance."""
    shape = pool.config.topology
    assert shape is not None and shape.nodes_per_domain is not None
    unlabelled = [
        f"{object_name(n)}: no `{missing[0]}`"
        for n in nodes
        if (missing := [key for key in tiers if not _labels(n).get(key)])
    ]
    if unlabelled:
        report.add(
            Finding(
                "pool-tier-label-missing",
                "error",
                f"pools.{name}.topology",
                f"{len(unlabelled)} node(s) of pool `{name}` lack a tier label: Volcano's label discovery stops at the "
                f"first one a node lacks, so a node without `{tiers[0]}` is in no HyperNode and one without a higher "
                "tier's label only in the tiers below it; no gang whose network constraint needs the missing tier "
                "runs there",
                f"check what sets the labels ({setter}), or move those nodes to a pool outside the fabric",
                listed(unlabelled),
            )
        )
    labelled = [_labels(n) for n in nodes if all(_labels(n).get(key) for key in tiers)]
    per_leaf = Counter(labels[tiers[0]] for labels in labelled)
    declared_per_leaf = shape.nodes_per_domain
    short = [
        f"{tiers[0]}={leaf}: {count} of {declared_per_leaf} nodes"
        for leaf, count in sorted(per_leaf.items())
        if count < declared_per_leaf
    ]
    if short and not pool.config.autoscaled:
        report.add(
            Finding(
                "pool-domain-short",
                "warning",
                f"pools.{name}.topology.nodesPerDomain",
                f"{len(short)} tier-1 domain(s) of pool `{name}` hold fewer nodes than declared: placement checks "
                "promise gangs room there that is not",
                "set `nodesPerDomain` and `domains` to what the labels say (`volcano-platform import-topology` "
                "reads them), or replace the missing instances",
                listed(short),
            )
        )
    for tier, key in enumerate(tiers, start=1):
        seen = len({labels[key] for labels in labelled})
        declared = shape.domains[tier - 1]
        if seen > declared or (seen < declared and not pool.config.autoscaled):
            report.add(
                Finding(
                    "pool-shape",
                    "warning",
                    f"pools.{name}.topology.domains[{tier - 1}]",
                    f"the nodes of pool `{name}` are in {seen} tier-{tier} domain(s) (`{key}`), the stack declares "
                    f"{declared}: placement checks describe another fabric",
                    "write the shape the labels have (`volcano-platform import-topology`)",
                )
            )
    overfull = [
        f"{tiers[0]}={leaf}: {count} nodes" for leaf, count in sorted(per_leaf.items()) if count > declared_per_leaf
    ]
    if overfull:
        report.add(
            Finding(
                "pool-shape",
                "warning",
                f"pools.{name}.topology.nodesPerDomain",
                f"tier-1 domain(s) of pool `{name}` hold more than {declared_per_leaf} nodes",
                "write the shape the labels have (`volcano-platform import-topology`)",
                listed(overfull),
            )
        )
