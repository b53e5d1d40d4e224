"""`NetworkTopology`: node labels from the domain tree, and HyperNodes in explicit mode."""

from __future__ import annotations

from typing import Any

import pulumi

from components.kubernetes.objects import custom_resource
from components.kubernetes.resource import NODE_PATCH, KubernetesResource
from config.platform_labels import MANAGED_BY
from config.sections.topology import TopologyConfig
from config.spec.topology import Domain, Topology
from config.upstream.kubernetes import PATCH_FORCE_ANNOTATION
from config.upstream.volcano import HYPERNODE_API_VERSION


def hypernode_manifest(domain: Domain, topology: Topology, tier_names: bool = True) -> dict[str, Any]:
    """A HyperNode for one domain. Leaves select their nodes by the leaf label (one member, not
    one per node); higher tiers list their child HyperNodes by exact name, the only selector the
    scheduler resolves for HyperNode members. The discovery source label is never set: the
    controller deletes labelled HyperNodes it did not discover."""
    if domain.tier == 1:
        members = [
            {
                "type": "Node",
                "selector": {"labelMatch": {"matchLabels": {topology.tiers[0]: domain.name}}},
            }
        ]
    else:
        members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": child}}} for child in domain.children]
    tier_name = {"tierName": topology.tiers[domain.tier - 1]} if tier_names else {}
    return {
        "apiVersion": HYPERNODE_API_VERSION,
        "kind": "HyperNode",
        "metadata": {"name": domain.name, "labels": dict(MANAGED_BY)},
        # `tierName` arrived with Volcano 1.14's HyperNode CRD (FLOOR_TIER_NAMES).
        "spec": {"tier": domain.tier, **tier_name, "members": members},
    }


class NetworkTopology(pulumi.ComponentResource):
    """One server-side-apply patch per node setting its tier labels (when enabled), and one
    HyperNode per domain when the stack asks for explicit HyperNodes."""

    def __init__(
        self,
        name: str,
        topology: Topology,
        config: TopologyConfig,
        volcano: pulumi.Resource,
        tier_names: bool = True,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:topology:NetworkTopology", name, None, opts)
        labels = config.node_labels
        if labels.enabled:
            annotations = {"annotations": {PATCH_FORCE_ANNOTATION: "true"}} if labels.force else {}
            # Removing a node from the config must not strip labels from a live node unless
            # the stack asks for it: `retain_on_delete` keeps the patched fields.
            patch_opts = pulumi.ResourceOptions(parent=self, retain_on_delete=labels.retain_on_delete)
            for node in topology.node_leaf:
                KubernetesResource(
                    f"{name}-node-{node}",
                    NODE_PATCH,
                    {"metadata": {"name": node, "labels": topology.labels_of(node), **annotations}},
                    patch_opts,
                )
        if topology.hyper_nodes == "explicit":
            created: dict[str, pulumi.Resource] = {}
            # Children before parents, so a parent's members exist when it is admitted.
            for domain in sorted(topology.named_domains, key=lambda d: d.tier):
                depends = [volcano, *(created[c] for c in domain.children)]
                created[domain.name] = custom_resource(
                    f"{name}-hypernode-{domain.name}",
                    hypernode_manifest(domain, topology, tier_names),
                    pulumi.ResourceOptions(parent=self, depends_on=depends, delete_before_replace=True),
                )
        self.register_outputs(
            {
                "nodes": len(topology.node_leaf),
                "domains": len(topology.named_domains),
                "hyperNodes": topology.hyper_nodes,
            }
        )
