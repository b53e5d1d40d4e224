"""The HyperNodes the scheduler sees after `pulumi up`: the cluster's, with the stack's over them.

A snapshot's HyperNodes are not all the cluster will have once the stack is applied:
- those Volcano's label discovery made (label `volcano.sh/network-topology-source: label`,
  `pkg/controllers/hypernode/discovery/label/label.go`, v1.15.1) are made again from the nodes'
  labels as they are then, nodes an autoscaled pool adds or a pull request names among them; where
  they already hold every node the stack's topology places, they are kept under the names Volcano
  gave them (the report shows those beside the stack's, `whatif/names.py`);
- those an earlier `up` of the stack made (the platform's managed-by label) are replaced by what
  the stack renders now, and `up` deletes those it no longer renders;
- the stack's own (explicit HyperNodes, or the named domains and pools of its topology) are
  applied over any of the same name.
Every other HyperNode (another discovery source, one made by hand) stays as it is. Both engines
read the HyperNodes from here, so they see the same tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from config.platform_labels import MANAGED_BY
from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from offline.manifests import Rendered
from whatif.discovery import discover

SOURCE_LABEL = "volcano.sh/network-topology-source"
"""Set by each discovery source on the HyperNodes it makes (pkg/controllers/hypernode/api/types.go)."""
LABEL_DISCOVERY = "label"
HYPERNODE_API = "topology.volcano.sh/v1alpha1"


def after_up(
    state: ClusterState, spec: PlatformSpec, rendered: Rendered, nodes: Iterable[tuple[str, Mapping[str, str]]]
) -> list[dict[str, Any]]:
    """Every HyperNode after the change, as manifests; `nodes` are (name, labels) of the cluster's
    nodes after it."""
    own = stack_hyper_nodes(spec, rendered, nodes)
    discovered = [h for h in state.hyper_nodes if _source(h) == LABEL_DISCOVERY]
    if discovered and not rendered.by_kind("HyperNode") and _leaf_nodes(discovered) == _leaf_nodes(own):
        own = []  # discovery has nothing to add: Volcano's own HyperNodes, under Volcano's names
    names = {h["metadata"]["name"] for h in own}
    kept = [h for h in state.hyper_nodes if h["metadata"]["name"] not in names and not (own and _remade(h))]
    return [*kept, *own]


def _source(hyper_node: dict[str, Any]) -> str | None:
    return (hyper_node["metadata"].get("labels") or {}).get(SOURCE_LABEL)


def _remade(hyper_node: dict[str, Any]) -> bool:
    """Made again from the stack: by label discovery from the nodes, or by the stack's own `up`."""
    labels = hyper_node["metadata"].get("labels") or {}
    return _source(hyper_node) == LABEL_DISCOVERY or all(labels.get(k) == v for k, v in MANAGED_BY.items())


def _leaf_nodes(hyper_nodes: list[dict[str, Any]]) -> set[str]:
    """The nodes named as members of tier-1 HyperNodes (discovery names each by `exactMatch`)."""
    return {
        (member.get("selector") or {}).get("exactMatch", {}).get("name", "")
        for h in hyper_nodes
        if int((h.get("spec") or {}).get("tier") or 0) == 1
        for member in (h.get("spec") or {}).get("members") or []
        if member.get("type", "Node") == "Node"
    }


def stack_hyper_nodes(
    spec: PlatformSpec, rendered: Rendered, nodes: Iterable[tuple[str, Mapping[str, str]]]
) -> list[dict[str, Any]]:
    """The stack's own HyperNodes, or those its topology makes Volcano's label discovery build: from
    the named domains, and for pools described by their shape from the `nodes`' labels."""
    own = [o.manifest for o in rendered.by_kind("HyperNode")]
    if own or spec.topology is None:
        return own
    topology = spec.topology
    named = topology.named_domains
    children: dict[str, list[tuple[str, str]]] = {d.name: [] for d in named}
    for node, leaf in topology.node_leaf.items():
        children[leaf].append(("Node", node))
    for domain in named:
        if domain.parent in children:
            children[domain.parent].append(("HyperNode", domain.name))
    tiers = {domain.name: domain.tier for domain in named}
    if topology.pools:
        unnamed = ((name, labels) for name, labels in nodes if name not in topology.node_leaf)
        for found in discover(unnamed, topology.tiers).values():
            kind = "Node" if found.tier == 1 else "HyperNode"
            children[found.name] = [(kind, member) for member in found.children]
            tiers[found.name] = found.tier
    return [
        {
            "apiVersion": HYPERNODE_API,
            "kind": "HyperNode",
            "metadata": {"name": name},
            "spec": {
                "tier": tiers[name],
                "tierName": topology.tiers[tiers[name] - 1],
                "members": [{"type": kind, "selector": {"exactMatch": {"name": member}}} for kind, member in members],
            },
        }
        for name, members in children.items()
    ]
