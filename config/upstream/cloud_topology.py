"""The node labels clouds and NVIDIA's tools set to describe where a GPU node sits on its network.

`topology.preset` fills `topology.tiers` from one of these, tier 1 (the domain closest to the node)
first, the order Volcano's label discovery and this program use. The labels belong to whoever sets
them (the cloud's node controller, a DaemonSet): the program never writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class TopologyPreset:
    name: str
    tiers: tuple[str, ...]
    """Label keys, tier 1 (closest to the node) first."""
    set_by: str
    """Who writes the labels on the nodes."""
    source: str
    """Where the keys and their order are documented."""


PRESETS: Final[dict[str, TopologyPreset]] = {
    preset.name: preset
    for preset in (
        # EC2 instance topology lists an instance's network nodes top-down, the last one attached to
        # the instance; the AWS cloud provider writes entry i as `network-node-layer-<i+1>`
        # (kubernetes/cloud-provider-aws `pkg/providers/v1/instances_v2.go`, v1.32.0), so layer 1 is
        # the top. Three layers on P4d, P5, P5e, P5en, Trn1, Trn2, G6e...; values are per-account
        # hashes such as `nn-e50490a237cb0f01a`.
        TopologyPreset(
            "aws",
            (
                "topology.k8s.aws/network-node-layer-3",
                "topology.k8s.aws/network-node-layer-2",
                "topology.k8s.aws/network-node-layer-1",
            ),
            "the AWS cloud controller manager, when it initialises the node (EKS)",
            "https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html; "
            "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/how-ec2-instance-topology-works.html",
        ),
        # P6-B200 and P6-B300 report a fourth layer below layer 3 (same sources).
        TopologyPreset(
            "aws-4-layer",
            (
                "topology.k8s.aws/network-node-layer-4",
                "topology.k8s.aws/network-node-layer-3",
                "topology.k8s.aws/network-node-layer-2",
                "topology.k8s.aws/network-node-layer-1",
            ),
            "the AWS cloud controller manager, when it initialises the node (EKS)",
            "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html",
        ),
        # GKE on A3 Ultra / A4: a block holds sub-blocks, a sub-block holds hosts; latency is lowest
        # on one host (Compute Engine `ResourceStatusPhysicalHostTopology`), and Google's own Kueue
        # topology lists block, subblock, host from the top.
        TopologyPreset(
            "gcp",
            (
                "cloud.google.com/gce-topology-host",
                "cloud.google.com/gce-topology-subblock",
                "cloud.google.com/gce-topology-block",
            ),
            "GKE",
            "https://cloud.google.com/kubernetes-engine/docs/how-to/compact-placement; "
            "https://cloud.google.com/ai-hypercomputer/docs/workloads/schedule-gke-workloads-tas",
        ),
        # OKE with a capacity topology: a local block under a network block under an HPC island,
        # values hashed from the instance metadata's `rdmaTopologyData`.
        TopologyPreset(
            "oci",
            (
                "oci.oraclecloud.com/rdma.local_block_id",
                "oci.oraclecloud.com/rdma.network_block_id",
                "oci.oraclecloud.com/rdma.hpc_island_id",
            ),
            "OKE at node bootstrap (or the oci-hpc-oke-utils labeler)",
            "https://github.com/oracle-quickstart/oci-hpc-oke/blob/main/docs/"
            "using-rdma-network-locality-when-running-workloads-on-oke.md",
        ),
        # NVIDIA Topograph from v1.0 labels each node with its switches, `tier-0` the one it is
        # attached to (`pkg/topology/topology.go`, `docs/reference/node-labels.md`); three switch
        # tiers here, `tiers` for another depth.
        TopologyPreset(
            "topograph",
            ("fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1", "fabric.topograph.run/tier-2"),
            "NVIDIA Topograph's Kubernetes engine",
            "https://github.com/NVIDIA/topograph/blob/main/docs/reference/node-labels.md",
        ),
        # NVLink domains (GB200 NVL72 and the like): GPU feature discovery sets
        # `<ClusterUUID>.<CliqueID>` when every fabric-attached GPU of the node shares one clique
        # (NVIDIA/k8s-device-plugin v0.20.0 `internal/lm/imex.go`); one clique is one domain.
        TopologyPreset(
            "nvlink",
            ("nvidia.com/gpu.clique",),
            "NVIDIA GPU feature discovery (GPU operator)",
            "https://github.com/NVIDIA/k8s-device-plugin/blob/v0.20.0/docs/gpu-feature-discovery/README.md",
        ),
    )
}

PRESET_NAMES = tuple(PRESETS)


NODE_GROUP_LABELS: Final[dict[str, str]] = {
    "aws": "eks.amazonaws.com/nodegroup",
    "aws-4-layer": "eks.amazonaws.com/nodegroup",
    "gcp": "cloud.google.com/gke-nodepool",
    "oci": "oci.oraclecloud.com/node-pool-id",
}
"""The label each cloud's managed node groups carry (EKS managed node groups, GKE node pools, OKE
node pools): what a pool's selector names on that cloud."""


def node_group_example(preset: str | None) -> str:
    """The node-group label a fix names, in the words of the stack's cloud."""
    label = NODE_GROUP_LABELS.get(preset or "")
    if label is not None:
        return f"`{label}: <group>`"
    return "a node-group label such as `eks.amazonaws.com/nodegroup` or `cloud.google.com/gke-nodepool`"
