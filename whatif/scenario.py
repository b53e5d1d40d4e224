"""Sessions from the project's scenario format: the shape the conformance fixtures are written in.

A scenario lists queues, nodes, HyperNodes, PodGroups, pods and priority classes the way Volcano's
table-driven tests build them (`pkg/scheduler/util/test_utils.go`): a pod without a priority has
task priority 1, objects are created at the same instant (orders fall back to names), a queue
without `reclaimable` is reclaimable, a PodGroup's priority is the value of its priority class (0
when the class does not exist).
"""

from __future__ import annotations

from typing import Any

from whatif.scheduler.model import (
    BOUND,
    FAILED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    HyperNode,
    Job,
    Node,
    Queue,
    QueueAffinity,
    SubGroupPolicy,
    Task,
    Topology,
)
from whatif.scheduler.resources import PODS, scheduler_units
from whatif.scheduler.session import Session

ROLE_KEY = "volcano.sh/task-spec"
PREEMPTABLE = "volcano.sh/preemptable"
"""Pod label or annotation, PodGroup annotation (`GetPodPreemptable`, `IsJobPreemptableForGangEviction`)."""


def topology_of(spec: dict[str, Any] | None) -> Topology | None:
    if not spec:
        return None
    tier = spec.get("highestTierAllowed")
    return Topology(str(spec.get("mode", "hard")), int(tier) if tier is not None else None, spec.get("highestTierName"))


def subgroup_policies(items: list[dict[str, Any]]) -> list[SubGroupPolicy]:
    """A PodGroup's `spec.subGroupPolicy`, with the defaults of `BuildSubGroupPolicy` (size 1,
    no minimum of sub-groups)."""
    return [
        SubGroupPolicy(
            str(p.get("name", "")),
            int(p.get("subGroupSize") or 1),
            int(p.get("minSubGroups") or 0),
            dict((p.get("labelSelector") or {}).get("matchLabels") or {}),
            tuple(p.get("matchLabelKeys") or ()),
            topology_of(p.get("networkTopology")),
        )
        for p in items
    ]


def gang_fields(spec: dict[str, Any], annotations: dict[str, Any]) -> dict[str, Any]:
    """The `Job` fields a PodGroup's spec and annotations give alike in a dump and in a scenario:
    `minResources`, `minTaskMember`, `networkTopology`, `subGroupPolicy`, `volcano.sh/preemptable`
    (None when unset) and the HyperNode the scheduler recorded."""
    preemptable = annotations.get(PREEMPTABLE)
    minimum = spec.get("minResources")
    return {
        "min_resources": scheduler_units(minimum) if minimum is not None else None,
        "min_task_member": {str(k): int(v) for k, v in (spec.get("minTaskMember") or {}).items()},
        "topology": topology_of(spec.get("networkTopology")),
        "subgroups": subgroup_policies(spec.get("subGroupPolicy") or []),
        "preemptable": None if preemptable is None else preemptable == "true",
        "allocated_hypernode": annotations.get("volcano.sh/job-allocated-hypernode", ""),
    }


def task_status(phase: str, node: str) -> str:
    if phase == "Running":
        return RUNNING
    if phase == "Succeeded":
        return SUCCEEDED
    if phase == "Failed":
        return FAILED
    return BOUND if node else PENDING


def pod_requests(requests: dict[str, Any]) -> dict[str, float]:
    return {**scheduler_units(requests), PODS: 1.0}


class HyperNodeCycleError(ValueError):
    """HyperNode members that lead back to a HyperNode: a tree has none."""


def hypernodes_of(items: list[dict[str, Any]]) -> dict[str, HyperNode]:
    """HyperNodes from `{name, tier, tierName, members: [{type, name}]}` items, each with every
    real node below it and its parent. Resolved without recursion, so neither a chain of any depth
    nor a cycle (refused with `HyperNodeCycleError`) can exhaust the stack."""
    members = {h["name"]: h.get("members", []) for h in items}
    resolved: dict[str, frozenset[str]] = {}

    def nodes_of(top: str) -> frozenset[str]:
        trail: list[str] = []
        stack = [(top, False)]
        while stack:
            name, done = stack.pop()
            if name in resolved:
                continue
            children = [m["name"] for m in members.get(name, []) if m.get("type") == "HyperNode"]
            if done:
                trail.pop()
                found = {m["name"] for m in members.get(name, []) if m.get("type") != "HyperNode"}
                for child in children:
                    found |= resolved.get(child, frozenset())
                resolved[name] = frozenset(found)
                continue
            if name in trail:
                cycle = " -> ".join((*trail[trail.index(name) :], name))
                raise HyperNodeCycleError(f"HyperNode members form a cycle ({cycle})")
            trail.append(name)
            stack.append((name, True))
            stack.extend((child, False) for child in children if child not in resolved)
        return resolved[top]

    out = {h["name"]: HyperNode(h["name"], int(h["tier"]), nodes_of(h["name"]), h.get("tierName", "")) for h in items}
    for hypernode in items:
        for member in hypernode.get("members", []):
            if member.get("type") == "HyperNode" and member["name"] in out:
                out[member["name"]].parent = hypernode["name"]
    return out


def queue_affinity(spec: dict[str, Any]) -> QueueAffinity | None:
    """A Queue's `spec.affinity` (None without one); parts of another shape are left out."""
    affinity = spec.get("affinity")
    if not isinstance(affinity, dict):
        return None

    def groups(key: str, when: str) -> tuple[str, ...]:
        part = affinity.get(key)
        values = part.get(f"{when}DuringSchedulingIgnoredDuringExecution") if isinstance(part, dict) else None
        return tuple(str(v) for v in values) if isinstance(values, list) else ()

    return QueueAffinity(
        groups("nodeGroupAffinity", "required"),
        groups("nodeGroupAffinity", "preferred"),
        groups("nodeGroupAntiAffinity", "required"),
        groups("nodeGroupAntiAffinity", "preferred"),
    )


def session_of(scenario: dict[str, Any]) -> Session:
    classes = {str(k): int(v) for k, v in (scenario.get("priorityClasses") or {}).items()}
    queues = {}
    for q in scenario.get("queues") or []:
        queues[q["name"]] = Queue(
            q["name"],
            weight=int(q.get("weight", 1)),
            capability=scheduler_units(q.get("capability") or {}),
            deserved=scheduler_units(q.get("deserved") or {}),
            guarantee=scheduler_units(q.get("guarantee") or {}),
            state=q.get("state", "Open"),
            reclaimable=q.get("reclaimable", True) is not False,
            priority=int(q.get("priority", 0)),
            parent=q.get("parent"),
            affinity=queue_affinity(q),
        )
    nodes = {
        n["name"]: Node(n["name"], scheduler_units(n.get("allocatable") or {}), dict(n.get("labels") or {}))
        for n in scenario.get("nodes") or []
    }
    jobs: dict[str, Job] = {}
    for pg in scenario.get("podGroups") or []:
        uid = f"{pg['namespace']}/{pg['name']}"
        jobs[uid] = Job(
            uid,
            pg["queue"],
            int(pg.get("minMember", 0)),
            pg.get("phase", "Pending"),
            priority=classes.get(str(pg.get("priorityClass")), 0),
            **gang_fields(pg, pg.get("annotations") or {}),
        )
    for pod in scenario.get("pods") or []:
        uid = f"{pod['namespace']}/{pod['name']}"
        job = jobs.get(f"{pod['namespace']}/{pod['group']}")
        if job is None:
            continue
        labels = {str(k): str(v) for k, v in (pod.get("labels") or {}).items()}
        node = pod.get("node") or ""
        job.tasks.append(
            Task(
                uid,
                job.uid,
                pod_requests(pod.get("requests") or {}),
                status=task_status(pod.get("phase", "Pending"), node),
                node=node,
                priority=int(pod["priority"]) if pod.get("priority") is not None else 1,
                preemptable=labels.get(PREEMPTABLE, "true") == "true",
                preemption_never=pod.get("preemptionPolicy") == "Never",
                role=labels.get(ROLE_KEY, ""),
                node_selector=dict(pod.get("nodeSelector") or {}),
                labels=labels,
            )
        )
    live = {uid: job for uid, job in jobs.items() if job.queue in queues}
    return Session(nodes, queues, live, hypernodes_of(scenario.get("hyperNodes") or []))
