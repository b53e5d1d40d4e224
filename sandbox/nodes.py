"""The nodes of a sandbox, shaped from a stack (pure): the GPU nodes its topology and pools
describe, as KWOK fakes them.

Each leaf of the stack's tree becomes its nodes: the named ones with their GPUs, or, for a pool
described by its shape alone, `<domain>-<n>` as many as the shape holds. A node carries what the
cluster's provisioner would have put there: its hostname, its pool's selector labels and product,
its pool's taints, and the tier labels when the stack reads them rather than sets them (a preset,
`nodeLabels.enabled: false`); when the stack sets them, its node patches label the nodes. Every
node offers plenty of CPU and memory and the devices the stack's models request, so only GPUs and
the network decide placement, as on the GPU clusters the stack describes.
"""

from __future__ import annotations

import re
from typing import Any

from config.spec.platform import PlatformSpec
from config.spec.topology import Domain, Topology

CPU, MEMORY, PODS = "256", "4Ti", "110"
DEVICES_PER_NODE = 32
"""Of each device resource a model requests (EFA interfaces, RDMA HCAs)."""


def stack_nodes(spec: PlatformSpec) -> list[dict[str, Any]]:
    topology = spec.topology
    if topology is None:
        return []
    sets_labels = spec.config.topology is not None and spec.config.topology.node_labels.enabled
    devices = sorted({d for m in spec.models.values() for v in (m, *m.role_views) for d in v.config.resources.devices})
    nodes = []
    for domain in topology.domains.values():
        if domain.children or not domain.capacity:
            continue
        pool = spec.pools.get(domain.pool) if domain.pool else None
        for name, gpus in _members(topology, domain):
            labels = {"kubernetes.io/hostname": name}
            if not sets_labels:
                labels.update(_tier_labels(topology, domain))
            taints: list[dict[str, str]] = []
            resource = spec.gpu_resource
            if pool is not None:
                labels.update(pool.labels)
                taints = [dict(t) for t in pool.taints]
                resource = pool.resource
            allocatable = {"cpu": CPU, "memory": MEMORY, "pods": PODS, resource: str(gpus)}
            allocatable.update({device: str(DEVICES_PER_NODE) for device in devices})
            node: dict[str, Any] = {
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": allocatable},
            }
            if taints:
                node["spec"] = {"taints": taints}
            nodes.append(node)
    return nodes


def _members(topology: Topology, domain: Domain) -> list[tuple[str, int]]:
    if domain.nodes:
        return [(name, topology.node_gpus.get(name, 0)) for name in domain.nodes]
    base = _label_value(domain.name)
    out, index = [], 0
    for gpus, count in domain.capacity:
        for _ in range(count):
            index += 1
            out.append((f"{base}-{index}", gpus))
    return out


def _tier_labels(topology: Topology, leaf: Domain) -> dict[str, str]:
    labels: dict[str, str] = {}
    domain: Domain | None = leaf
    while domain is not None and 1 <= domain.tier <= len(topology.tiers):
        labels[topology.tiers[domain.tier - 1]] = _label_value(domain.name)
        domain = topology.domains.get(domain.parent) if domain.parent else None
    return labels


def _label_value(name: str) -> str:
    """A domain's name as a label value and node name (a generated one holds `/`)."""
    return re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")
