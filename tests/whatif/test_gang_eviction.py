"""Gang-aware reclaim keeps a queue's deserved share only with the queue plugin in gang's tier.

`Session.UnifiedEvictable` (pkg/scheduler/framework/session_plugins.go, v1.15.1) returns the victims
of the first tier that yields any; upstream's gang-eviction e2e policy puts `capacity` in tier 1 for
that reason (test/e2e/gangevict/gangevict.go). The scenario: queue `b` runs two 8-GPU gangs, exactly
its deserved 16 GPUs, on a cluster of 16; queue `a` (deserved 8) submits an 8-GPU gang. Under the
policy the platform renders nothing may be reclaimed; with `capacity` moved to tier 2 `gangreclaim`
takes a gang of `b` and leaves it below its deserved share."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from offline.render import StackRender
from whatif.predict import policy_of
from whatif.scenario import session_of
from whatif.scheduler.engine import open_session, run_cycle

GPU = "nvidia.com/gpu"


def scenario() -> dict[str, Any]:
    pod = {"cpu": "8", "memory": "64Gi", GPU: "8"}
    return {
        "priorityClasses": {"normal": 100},
        "queues": [
            {"name": "a", "deserved": {GPU: "8"}, "state": "Open"},
            {"name": "b", "deserved": {GPU: "16"}, "state": "Open"},
        ],
        "nodes": [
            {"name": f"n{i}", "allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}} for i in (1, 2)
        ],
        "podGroups": [
            {
                "name": "b1",
                "namespace": "nb",
                "queue": "b",
                "minMember": 1,
                "phase": "Running",
                "priorityClass": "normal",
            },
            {
                "name": "b2",
                "namespace": "nb",
                "queue": "b",
                "minMember": 1,
                "phase": "Running",
                "priorityClass": "normal",
            },
            {
                "name": "a1",
                "namespace": "na",
                "queue": "a",
                "minMember": 1,
                "phase": "Inqueue",
                "priorityClass": "normal",
            },
        ],
        "pods": [
            {"name": "b1-0", "namespace": "nb", "group": "b1", "node": "n1", "phase": "Running", "requests": pod},
            {"name": "b2-0", "namespace": "nb", "group": "b2", "node": "n2", "phase": "Running", "requests": pod},
            {"name": "a1-0", "namespace": "na", "group": "a1", "phase": "Pending", "requests": pod},
        ],
    }


def gangreclaim_evictions(tiers: list[list[dict[str, Any]]]) -> list[str]:
    session = session_of(scenario())
    open_session(session, tiers)
    run_cycle(session, ["enqueue", "allocate", "gangpreempt", "gangreclaim"])
    return session.evictions


def test_the_rendered_policy_keeps_deserved_and_tier_two_would_not(
    committed_render: Callable[[str], StackRender],
) -> None:
    spec = committed_render("aicloud-a").spec
    tiers, actions, _ = policy_of(spec)
    assert "gangreclaim" in actions
    assert gangreclaim_evictions(tiers) == []
    moved = copy.deepcopy(tiers)
    capacity = next(p for p in moved[0] if p["name"] == "capacity")
    moved[0].remove(capacity)
    moved[1].append(capacity)
    assert len(gangreclaim_evictions(moved)) == 1


def test_reclaim_takes_what_is_above_deserved() -> None:
    """With `b` deserving 8 it runs 8 above: one gang may go, never both."""
    data = scenario()
    data["queues"][1]["deserved"] = {GPU: "8"}
    session = session_of(data)
    tiers = [
        [
            {"name": "priority"},
            {"name": "gang", "enableJobStarving": False},
            {"name": "conformance"},
            {"name": "capacity"},
        ],
        [{"name": "predicates"}],
    ]
    open_session(session, tiers)
    run_cycle(session, ["enqueue", "allocate", "gangpreempt", "gangreclaim"])
    assert len(session.evictions) == 1 and session.evictions[0].startswith("nb/")


def preemption_scenario(pending_gpus: int) -> dict[str, Any]:
    """Queue `a` on three 8-GPU nodes: low-priority gangs hold 4 GPUs of n1 and of n3, a running
    high-priority job holds n2 and wants one more pod of `pending_gpus`."""

    def pod(gpus: int) -> dict[str, str]:
        return {"cpu": "4", "memory": "32Gi", GPU: str(gpus)}

    def group(name: str, priority: str, phase: str) -> dict[str, Any]:
        return {
            "name": name,
            "namespace": "na",
            "queue": "a",
            "minMember": 1,
            "phase": phase,
            "priorityClass": priority,
        }

    def placed(name: str, node: str, gpus: int) -> dict[str, Any]:
        return {
            "name": f"{name}-0",
            "namespace": "na",
            "group": name,
            "node": node,
            "phase": "Running",
            "requests": pod(gpus),
        }

    return {
        "priorityClasses": {"low": 10, "high": 1000},
        "queues": [{"name": "a", "deserved": {GPU: "24"}, "state": "Open"}],
        "nodes": [
            {"name": f"n{i}", "allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}}
            for i in (1, 2, 3)
        ],
        "podGroups": [
            group("low1", "low", "Running"),
            group("low3", "low", "Running"),
            group("high", "high", "Running"),
        ],
        "pods": [
            placed("low1", "n1", 4),
            placed("low3", "n3", 4),
            placed("high", "n2", 8),
            {"name": "high-1", "namespace": "na", "group": "high", "phase": "Pending", "requests": pod(pending_gpus)},
        ],
    }


def test_a_gang_is_evicted_only_for_pods_that_can_then_be_placed(
    committed_render: Callable[[str], StackRender],
) -> None:
    """`BuildNominationPlanInDomain` (pkg/scheduler/actions/utils/simulate.go, v1.15.1) keeps a
    plan only when every pod of the sub-job found a node (`runSimulateTrialAtHyperNode`): a job
    that is already ready does not evict for a pod no node can hold, however much the domain
    frees in total (here 16 GPUs for a 12-GPU pod on 8-GPU nodes)."""
    tiers, _, _ = policy_of(committed_render("aicloud-a").spec)
    evictions = {}
    for gpus in (8, 12):
        session = session_of(preemption_scenario(gpus))
        open_session(session, tiers)
        run_cycle(session, ["enqueue", "allocate", "gangpreempt"])
        evictions[gpus] = session.evictions
    assert len(evictions[8]) == 1 and evictions[8][0] in ("na/low1-0", "na/low3-0")
    assert evictions[12] == []


def leaf_scenario(holders: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """Queue `a` on two leaves of two 8-GPU nodes (l1: n1 n2, l2: n3 n4) and a pending LWS-like
    model: one sub-group of two 8-GPU pods that must share a leaf (hard tier 1), `minMember` 2.
    `holders`: node -> (priority class, GPUs) of the one-pod gang running there."""
    node = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
    groups: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for name, (priority, gpus) in holders.items():
        groups.append({"name": f"on-{name}", "namespace": "na", "queue": "a", "minMember": 1, "phase": "Running"})
        groups[-1]["priorityClass"] = priority
        requests = {"cpu": "4", "memory": "32Gi", GPU: str(gpus)}
        pods.append(
            {"name": f"on-{name}-0", "namespace": "na", "group": f"on-{name}", "node": name, "phase": "Running"}
        )
        pods[-1]["requests"] = requests
    lws = {"leaderworkerset.sigs.k8s.io/name": "m", "leaderworkerset.sigs.k8s.io/group-index": "0"}
    model = {"name": "m", "namespace": "na", "queue": "a", "minMember": 2, "phase": "Inqueue", "priorityClass": "high"}
    model["subGroupPolicy"] = [
        {
            "name": "lws-group",
            "subGroupSize": 2,
            "labelSelector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "m"}},
            "matchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-index"],
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        }
    ]
    for position in (0, 1):
        pods.append({"name": f"m-0-{position}", "namespace": "na", "group": "m", "phase": "Pending", "labels": lws})
        pods[-1]["requests"] = {"cpu": "8", "memory": "64Gi", GPU: "8"}

    def leaf(name: str, members: tuple[str, ...]) -> dict[str, Any]:
        return {"name": name, "tier": 1, "members": [{"type": "Node", "name": n} for n in members]}

    return {
        "priorityClasses": {"low": 10, "high": 1000},
        "queues": [{"name": "a", "deserved": {GPU: "32"}, "state": "Open"}],
        "nodes": [{"name": f"n{i}", "allocatable": node} for i in (1, 2, 3, 4)],
        "hyperNodes": [
            leaf("l1", ("n1", "n2")),
            leaf("l2", ("n3", "n4")),
            {"name": "s1", "tier": 2, "members": [{"type": "HyperNode", "name": h} for h in ("l1", "l2")]},
        ],
        "podGroups": [*groups, model],
        "pods": pods,
    }


def gangpreempt_evictions(scenario: dict[str, Any], tiers: list[list[dict[str, Any]]]) -> list[str]:
    session = session_of(scenario)
    open_session(session, tiers)
    run_cycle(session, ["enqueue", "allocate", "gangpreempt"])
    return sorted(session.evictions)


def test_a_sub_group_that_must_share_a_leaf_evicts_where_its_pods_then_have_room(
    committed_render: Callable[[str], StackRender],
) -> None:
    """The cluster has the 16 free GPUs the sub-group needs, but no leaf has two free nodes: the
    nomination places both pods in one leaf (`runSimulateTrialAtHyperNode` at tier 1), so the
    gang evicted is the one whose node completes a leaf, never a gang whose leaf still lacks
    room; with every gang of l1 protected and l2 short a node even when emptied of what may be
    taken, nothing is evicted."""
    tiers, _, _ = policy_of(committed_render("aicloud-a").spec)
    half_full = {"n1": ("low", 8), "n3": ("low", 4), "n4": ("low", 4)}
    assert gangpreempt_evictions(leaf_scenario(half_full), tiers) == ["na/on-n1-0"]
    protected = {"n1": ("high", 8), "n3": ("low", 4), "n4": ("high", 4)}
    assert gangpreempt_evictions(leaf_scenario(protected), tiers) == []


def test_a_node_over_its_allocatable_takes_no_room_from_its_leaf(
    committed_render: Callable[[str], StackRender],
) -> None:
    """A dump can show a node running more than its allocatable (its GPUs or CPUs shrank under
    running pods). Such a node has room for no pod, not for fewer than none: the leaf keeps the
    room its other nodes have, and the gang whose node completes it is still evicted."""
    tiers, _, _ = policy_of(committed_render("aicloud-a").spec)
    scenario = leaf_scenario({"n1": ("low", 8), "n3": ("high", 8), "n4": ("high", 8)})
    scenario["nodes"].append({"name": "n5", "allocatable": {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}})
    scenario["hyperNodes"][0]["members"].append({"type": "Node", "name": "n5"})
    scenario["podGroups"].append(
        {"name": "on-n5", "namespace": "na", "queue": "a", "minMember": 1, "phase": "Running", "priorityClass": "high"}
    )
    scenario["pods"].append(
        {"name": "on-n5-0", "namespace": "na", "group": "on-n5", "node": "n5", "phase": "Running"}
        | {"requests": {"cpu": "66", "memory": "8Gi"}}
    )
    assert gangpreempt_evictions(scenario, tiers) == ["na/on-n1-0"]
