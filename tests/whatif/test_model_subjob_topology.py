"""The default sub-job's network topology and the HyperNode room the gradients read, in the
conformance-fixture format (`whatif.scenario.session_of`), each checked against Volcano v1.15.1's
own session (`volcano-session` gave the same answer for every one).

- pods no sub-group policy captures form the default sub-job, which carries the job's topology
  (`pkg/scheduler/api/job_info.go` `getOrCreateDefaultSubJob`), so its own gradient asks a
  HyperNode to hold all its pending pods (`api/sub_job_info.go` `GetMinResources`);
- that room test reads the HyperNodes' idle resources as the session opened
  (`network_topology_aware.go` `initHyperNodeResourceCache`, `isEligibleHyperNode`);
- the nomination of gang eviction asks the sub-job's gradient for eviction: allocatable room,
  widest HyperNode first (`actions/utils/simulate.go` `BuildNominationPlanInDomain`).
"""

from __future__ import annotations

from typing import Any

from whatif.scenario import session_of
from whatif.scheduler.engine import open_session, run_cycle

GPU = "nvidia.com/gpu"
NTA = {
    "name": "network-topology-aware",
    "arguments": {
        "weight": 10,
        "hypernode.binpack.cpu": 1,
        "hypernode.binpack.memory": 1,
        "hypernode.binpack.resources": GPU,
        f"hypernode.binpack.resources.{GPU}": 10,
    },
}
NODE = {"cpu": "16", "memory": "64Gi", "pods": "110", GPU: "4"}
POD = {"cpu": "1", "memory": "4Gi", GPU: "2"}


def scenario(
    pod_groups: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    hypernodes: list[dict[str, Any]],
    nodes: tuple[str, ...] = ("n1", "n2"),
    actions: tuple[str, ...] = ("enqueue", "allocate"),
    tiers: list[list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    return {
        "priorityClasses": {"low": 10, "high": 1000},
        "policy": {"actions": list(actions), "tiers": tiers or [[{"name": "gang"}, {"name": "predicates"}, NTA]]},
        "queues": [{"name": "q1", "weight": 1, "state": "Open"}],
        "nodes": [{"name": n, "allocatable": dict(NODE)} for n in nodes],
        "hyperNodes": hypernodes,
        "podGroups": [{"namespace": "ns", "queue": "q1", "phase": "Inqueue", **pg} for pg in pod_groups],
        "pods": [{"namespace": "ns", "phase": "Pending", **pod} for pod in pods],
    }


def holding(name: str, tier: int, kind: str, members: list[str]) -> dict[str, Any]:
    return {"name": name, "tier": tier, "members": [{"type": kind, "name": m} for m in members]}


def cycle(case: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The binds and evictions of one session with every plugin flag on."""
    session = session_of(case)
    open_session(session, case["policy"]["tiers"])
    run_cycle(session, tuple(case["policy"]["actions"]))
    return dict(session.binds), list(session.evictions)


def test_the_default_sub_job_needs_a_hypernode_holding_all_its_pending_pods() -> None:
    """A hard tier-1 job of minMember 1 with two 4-GPU pods; each tier-1 HyperNode has one 4-GPU
    node. The job's gradient (no minResources) offers both, but the default sub-job has the job's
    tier and needs 8 GPUs in one HyperNode: nothing is placed, though one pod would make it ready."""
    big = {"cpu": "1", "memory": "4Gi", GPU: "4"}
    case = scenario(
        [{"name": "pg", "minMember": 1, "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}],
        [{"name": f"p{i}", "group": "pg", "requests": dict(big)} for i in range(2)],
        [
            holding("s0", 1, "Node", ["n1"]),
            holding("s1", 1, "Node", ["n2"]),
            holding("s2", 2, "HyperNode", ["s0", "s1"]),
        ],
    )
    assert cycle(case) == ({}, [])


def test_the_gradient_reads_hypernode_room_as_the_session_opened() -> None:
    """s0 (n1, 4 GPUs) is the only HyperNode. Job a (first) takes 2 GPUs there; job b, hard tier 1
    with minResources of 4 GPUs, still gets s0 in its gradient, whose idle room the plugin counted
    when the session opened, and places one 2-GPU pod (minMember 1)."""
    case = scenario(
        [
            {"name": "a", "minMember": 1},
            {
                "name": "b",
                "minMember": 1,
                "minResources": {GPU: "4"},
                "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
            },
        ],
        [
            {"name": "a0", "group": "a", "requests": dict(POD)},
            {"name": "b0", "group": "b", "requests": dict(POD)},
            {"name": "b1", "group": "b", "requests": dict(POD)},
        ],
        [holding("s0", 1, "Node", ["n1"])],
        nodes=("n1",),
    )
    binds, _ = cycle(case)
    assert binds == {"ns/a0": "n1", "ns/b0": "n1"}


def test_the_nomination_reads_the_default_sub_job_gradient_for_eviction() -> None:
    """A high-priority soft-topology job (hard up to the virtual root, its default sub-job too)
    needs 4 GPUs; low-priority pods fill both nodes. No HyperNode has the room idle, but their
    allocatable holds it: gangpreempt evicts inside the widest one and pipelines the pod."""
    tiers = [
        [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}],
        [{"name": "predicates"}, NTA],
    ]
    case = scenario(
        [
            {"name": "low", "minMember": 1, "phase": "Running", "priorityClass": "low"},
            {
                "name": "high",
                "minMember": 1,
                "priorityClass": "high",
                "networkTopology": {"mode": "soft", "highestTierAllowed": 1},
            },
        ],
        [
            {
                "name": "l0",
                "group": "low",
                "phase": "Running",
                "node": "n1",
                "requests": {"cpu": "8", "memory": "32Gi", GPU: "4"},
            },
            {
                "name": "l1",
                "group": "low",
                "phase": "Running",
                "node": "n2",
                "requests": {"cpu": "8", "memory": "32Gi", GPU: "4"},
            },
            {"name": "h0", "group": "high", "requests": {"cpu": "1", "memory": "4Gi", GPU: "4"}},
        ],
        [holding("s0", 1, "Node", ["n1"]), holding("s1", 1, "Node", ["n2"])],
        actions=("enqueue", "allocate", "gangpreempt"),
        tiers=tiers,
    )
    binds, evictions = cycle(case)
    assert binds == {}
    assert evictions == ["ns/l0"]
