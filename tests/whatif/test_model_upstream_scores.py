"""Scenarios where Volcano v1.15.1's own code and an earlier model disagreed, each in the
conformance-fixture format (`whatif.scenario.session_of`) and checked against what the real
session does (`volcano-session` gave the same binds for every one).

- nodeorder scores with the kube-scheduler's integer formulas and the GPU in balanced allocation
  (`pkg/scheduler/plugins/nodeorder/nodeorder.go`, k8s `noderesources/balanced_allocation.go`);
- a job or sub-group already spread wider than its hard tier gets no HyperNode gradient
  (`network_topology_aware.go` `getSearchRoot`);
- the HyperNode a hard-topology job goes to is the one the weighted HyperNode binpack prefers
  (`network_topology_aware.go` `getSubJobHyperNodeBinPackingScore`).
"""

from __future__ import annotations

from typing import Any

from whatif.scenario import session_of
from whatif.scheduler.engine import open_session, run_cycle

NTA_ARGUMENTS = {
    "weight": 10,
    "hypernode.binpack.cpu": 1,
    "hypernode.binpack.memory": 1,
    "hypernode.binpack.resources": "nvidia.com/gpu",
    "hypernode.binpack.resources.nvidia.com/gpu": 10,
}
NODE = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"}


def scenario(
    plugins: list[dict[str, Any]],
    nodes: list[str],
    pod_groups: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    hypernodes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "policy": {"actions": ["enqueue", "allocate"], "tiers": [[{"name": "gang"}, {"name": "predicates"}, *plugins]]},
        "queues": [{"name": "q1", "weight": 1, "state": "Open"}],
        "nodes": [{"name": n, "allocatable": dict(NODE)} for n in nodes],
        "hyperNodes": hypernodes or [],
        "podGroups": [{"namespace": "ns", "queue": "q1", "phase": "Inqueue", **pg} for pg in pod_groups],
        "pods": [{"namespace": "ns", "phase": "Pending", **pod} for pod in pods],
    }


def running(name: str, node: str, requests: dict[str, str], group: str = "run") -> dict[str, Any]:
    return {"name": name, "group": group, "phase": "Running", "node": node, "requests": requests}


def holding(name: str, tier: int, kind: str, members: list[str]) -> dict[str, Any]:
    return {"name": name, "tier": tier, "members": [{"type": kind, "name": m} for m in members]}


def binds(case: dict[str, Any]) -> dict[str, str]:
    """The binds of one session with every plugin flag on, as the scheduler reads its conf."""
    session = session_of(case)
    open_session(session, case["policy"]["tiers"])
    run_cycle(session, tuple(case["policy"]["actions"]))
    return dict(session.binds)


def two_racks() -> list[dict[str, Any]]:
    """s0 {n1, n2} and s1 {n3, n4} at tier 1 under s2 at tier 2."""
    return [
        holding("s0", 1, "Node", ["n1", "n2"]),
        holding("s1", 1, "Node", ["n3", "n4"]),
        holding("s2", 2, "HyperNode", ["s0", "s1"]),
    ]


def test_balanced_allocation_is_a_standard_deviation_in_integers() -> None:
    """n1 holds 4 cpu and 32Gi, n2 8 cpu and 32Gi; a 1 cpu, 2Gi pod. leastrequested gives 57 and
    44 (integer shares, averaged), balancedresource 100 (1 - |cpu - memory| / 2) 89 and 98: n1 146,
    n2 142. Reading balance as 1 - |cpu - memory| in floats put n2 first."""
    case = scenario(
        [{"name": "nodeorder"}],
        ["n1", "n2"],
        [{"name": "run", "minMember": 1, "phase": "Running"}, {"name": "pg", "minMember": 1}],
        [
            running("r1", "n1", {"cpu": "4", "memory": "32Gi"}),
            running("r2", "n2", {"cpu": "8", "memory": "32Gi"}),
            {"name": "p1", "group": "pg", "requests": {"cpu": "1", "memory": "2Gi"}},
        ],
    )
    assert binds(case) == {"ns/p1": "n1"}


def test_balanced_allocation_counts_the_gpu_a_pod_asks_for() -> None:
    """n1 has 2 of its 4 GPUs taken, n2 16Gi of memory; the pod asks 1 cpu, 2Gi and a GPU. On cpu
    and memory alone n1 is the more balanced; with the GPU (nodeorder adds nvidia.com/gpu to the
    balanced resources) n2 is."""
    case = scenario(
        [{"name": "nodeorder"}],
        ["n1", "n2"],
        [{"name": "run", "minMember": 1, "phase": "Running"}, {"name": "pg", "minMember": 1}],
        [
            running("r1", "n1", {"cpu": "100m", "memory": "100Mi", "nvidia.com/gpu": "2"}),
            running("r2", "n2", {"cpu": "100m", "memory": "16Gi"}),
            {"name": "p1", "group": "pg", "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"}},
        ],
    )
    assert binds(case) == {"ns/p1": "n2"}


def test_job_spread_wider_than_its_tier_gets_no_gradient() -> None:
    """A hard tier-1 job whose running pods sit in s0 and s1: the lowest HyperNode holding them is
    s2, above the tier, so the search root fails and its pending pod is not placed."""
    case = scenario(
        [{"name": "network-topology-aware", "arguments": dict(NTA_ARGUMENTS)}],
        ["n1", "n2", "n3", "n4"],
        [
            {
                "name": "pg",
                "minMember": 1,
                "phase": "Running",
                "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            }
        ],
        [
            running("p1", "n1", {"cpu": "2", "memory": "4Gi"}, group="pg"),
            running("p2", "n3", {"cpu": "2", "memory": "4Gi"}, group="pg"),
            {"name": "p3", "group": "pg", "requests": {"cpu": "2", "memory": "4Gi"}},
        ],
        two_racks(),
    )
    assert binds(case) == {}


def test_sub_group_spread_wider_than_its_tier_gets_no_gradient() -> None:
    """Sub-group 0 (hard tier 1) runs on n1 (s0) and n3 (s1) and waits for a third pod: it gets
    nothing; sub-group 1 is placed whole inside one tier-1 HyperNode."""
    labels = "leaderworkerset.sigs.k8s.io/group-index"
    policy = {
        "name": "lws",
        "subGroupSize": 3,
        "labelSelector": {"matchLabels": {"app": "lws"}},
        "matchLabelKeys": [labels],
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    request = {"cpu": "2", "memory": "4Gi"}

    def pod(name: str, group: str, node: str = "") -> dict[str, Any]:
        out = {"name": name, "group": "pg", "labels": {"app": "lws", labels: group}, "requests": dict(request)}
        return {**out, "phase": "Running", "node": node} if node else out

    case = scenario(
        [{"name": "network-topology-aware", "arguments": dict(NTA_ARGUMENTS)}],
        ["n1", "n2", "n3", "n4"],
        [{"name": "pg", "minMember": 3, "phase": "Running", "subGroupPolicy": [policy]}],
        [pod("a0", "0", "n1"), pod("a1", "0", "n3"), pod("a2", "0"), pod("b0", "1"), pod("b1", "1"), pod("b2", "1")],
        two_racks(),
    )
    placed = binds(case)
    assert sorted(placed) == ["ns/b0", "ns/b1", "ns/b2"]
    assert set(placed.values()) <= {"n1", "n2"} or set(placed.values()) <= {"n3", "n4"}


def test_hypernode_binpack_weighs_resources_as_configured() -> None:
    """s0 (n1) has most of its cpu and memory taken, s1 (n3) half its GPUs. Unweighted, the GPU
    job's pod would fill s0 most; with the stack's weights (GPU 10, cpu and memory 1) s1 scores
    0.67 against s0's 0.35, and the job goes there."""
    racks = [holding("s0", 1, "Node", ["n1"]), holding("s1", 1, "Node", ["n3"])]
    hypernodes = [*racks, holding("s2", 2, "HyperNode", ["s0", "s1"])]
    case = scenario(
        [{"name": "network-topology-aware", "arguments": dict(NTA_ARGUMENTS)}],
        ["n1", "n3"],
        [
            {"name": "run", "minMember": 1, "phase": "Running"},
            {"name": "pg", "minMember": 1, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
        ],
        [
            running("r1", "n1", {"cpu": "12", "memory": "48Gi"}),
            running("r3", "n3", {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "2"}),
            {"name": "p1", "group": "pg", "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}},
        ],
        hypernodes,
    )
    assert binds(case) == {"ns/p1": "n3"}
