"""The nodes a sandbox fakes are the stack's: every node of its topology and pools, with the labels,
taints and devices a provisioner would have given them."""

from __future__ import annotations

from collections import Counter

from sandbox.nodes import stack_nodes
from tests.conftest import load, stack_raw


def test_named_nodes_keep_their_names_and_gpus_and_wait_for_the_stacks_labels() -> None:
    nodes = stack_nodes(load(stack_raw("aicloud-b")))
    assert [n["metadata"]["name"] for n in nodes][:2] == ["gpu-b-01", "gpu-b-02"] and len(nodes) == 32
    assert {n["status"]["allocatable"]["nvidia.com/gpu"] for n in nodes} == {"8"}
    # The stack labels its nodes itself (node patches): the sandbox leaves the tier labels to it.
    assert all(set(n["metadata"]["labels"]) == {"kubernetes.io/hostname"} for n in nodes)


def test_pools_described_by_their_shape_get_their_provisioners_labels_and_taints() -> None:
    spec = load(stack_raw("aicloud-eks"))
    nodes = stack_nodes(spec)
    by_pool = Counter(n["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") for n in nodes)
    assert by_pool["h100-a"] == 64 and by_pool["l40s"] == spec.pools["l40s"].config.max_nodes
    h100 = next(n for n in nodes if n["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") == "h100-a")
    labels = h100["metadata"]["labels"]
    # A preset: the tier labels are the cloud's, so the sandbox's nodes carry them.
    assert {"topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-3"} <= set(labels)
    assert h100["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert h100["status"]["allocatable"]["vpc.amazonaws.com/efa"] == "32"  # a device the models request


def test_a_stack_without_nodes_has_none() -> None:
    raw = stack_raw("dev")
    raw.pop("topology", None)
    assert stack_nodes(load(raw)) == []
