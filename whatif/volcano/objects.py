"""Kubernetes objects and scheduler configurations for `volcano-session`.

Two sources: the scenario format of the conformance fixtures (`whatif/scenario.py`), written as
Volcano's test helpers build their objects (`pkg/scheduler/util/test_utils.go`: `BuildNode` sets
capacity and allocatable and no condition, `BuildPod` one container with the requests, the
PodGroup in the `scheduling.k8s.io/group-name` annotation and the UID `<namespace>-<name>`), and
the scheduler configuration the stack renders.
"""

from __future__ import annotations

from typing import Any

import yaml

from config.upstream.volcano import GROUP_NAME_ANNOTATION

SCHEDULER_NAME = "volcano"
"""The name `volcano-session`'s cache answers to (`SchedulerName` in `volcano-session/session.go`)."""
V1BETA1 = "scheduling.volcano.sh/v1beta1"


def conf_text(
    actions: list[str] | tuple[str, ...], tiers: list[list[dict[str, Any]]], configurations: Any = None
) -> str:
    """A `volcano-scheduler.conf` with these actions, tiers and action configurations."""
    document: dict[str, Any] = {
        "actions": ", ".join(actions),
        "tiers": [{"plugins": [dict(plugin) for plugin in tier]} for tier in tiers],
    }
    if configurations:
        document["configurations"] = [dict(c) for c in configurations]
    return yaml.safe_dump(document, sort_keys=False)


def _quantities(values: dict[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (values or {}).items()}


def _node(node: dict[str, Any]) -> dict[str, Any]:
    allocatable = _quantities(node.get("allocatable"))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node["name"], "labels": dict(node.get("labels") or {}), "annotations": {}},
        "spec": {},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def _queue(queue: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": int(queue.get("weight", 1))}
    if queue.get("capability"):
        spec["capability"] = _quantities(queue["capability"])
    if queue.get("deserved"):
        spec["deserved"] = _quantities(queue["deserved"])
    if queue.get("guarantee"):
        spec["guarantee"] = {"resource": _quantities(queue["guarantee"])}
    if "reclaimable" in queue:
        spec["reclaimable"] = bool(queue["reclaimable"])
    if queue.get("priority") is not None:
        spec["priority"] = int(queue["priority"])
    if queue.get("parent"):
        spec["parent"] = queue["parent"]
    if queue.get("affinity"):
        spec["affinity"] = queue["affinity"]
    return {
        "apiVersion": V1BETA1,
        "kind": "Queue",
        "metadata": {"name": queue["name"]},
        "spec": spec,
        "status": {"state": queue.get("state", "Open")},
    }


def _pod_group(group: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"queue": group["queue"], "minMember": int(group.get("minMember", 0))}
    for key in ("minTaskMember", "networkTopology", "subGroupPolicy"):
        if group.get(key) is not None:
            spec[key] = group[key]
    if group.get("minResources") is not None:
        spec["minResources"] = _quantities(group["minResources"])
    if group.get("priorityClass"):
        spec["priorityClassName"] = group["priorityClass"]
    return {
        "apiVersion": V1BETA1,
        "kind": "PodGroup",
        "metadata": {
            "name": group["name"],
            "namespace": group["namespace"],
            "annotations": {str(k): str(v) for k, v in (group.get("annotations") or {}).items()},
        },
        "spec": spec,
        "status": {"phase": group.get("phase", "Pending")},
    }


def _pod(pod: dict[str, Any]) -> dict[str, Any]:
    namespace, name = pod["namespace"], pod["name"]
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME,
        "containers": [{"name": "main", "resources": {"requests": _quantities(pod.get("requests"))}}],
    }
    if pod.get("node"):
        spec["nodeName"] = pod["node"]
    if pod.get("nodeSelector"):
        spec["nodeSelector"] = dict(pod["nodeSelector"])
    if pod.get("priority") is not None:
        spec["priority"] = int(pod["priority"])
    if pod.get("preemptionPolicy"):
        spec["preemptionPolicy"] = pod["preemptionPolicy"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"{namespace}-{name}",
            "labels": {str(k): str(v) for k, v in (pod.get("labels") or {}).items()},
            "annotations": {GROUP_NAME_ANNOTATION: pod.get("group", "")},
        },
        "spec": spec,
        "status": {"phase": pod.get("phase", "Pending")},
    }


def _hyper_node(hyper_node: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "tier": int(hyper_node["tier"]),
        "members": [
            {"type": m.get("type", "Node"), "selector": {"exactMatch": {"name": m["name"]}}}
            for m in hyper_node.get("members") or []
        ],
    }
    if hyper_node.get("tierName"):
        spec["tierName"] = hyper_node["tierName"]
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": hyper_node["name"]},
        "spec": spec,
    }


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": int(value),
    }


def scenario_objects(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """A scenario's objects, in the order Volcano's test helper adds them to the cache."""
    return [
        *(_node(n) for n in scenario.get("nodes") or []),
        *(_pod(p) for p in scenario.get("pods") or []),
        *(_pod_group(g) for g in scenario.get("podGroups") or []),
        *(_queue(q) for q in scenario.get("queues") or []),
        *(_priority_class(k, v) for k, v in (scenario.get("priorityClasses") or {}).items()),
        *(_hyper_node(h) for h in scenario.get("hyperNodes") or []),
    ]


def scenario_case(
    case_id: str, scenario: dict[str, Any], *, cycles: int = 1, repeat: int = 1, defaults: bool = False
) -> dict[str, Any]:
    """A case for one scenario; `defaults=False` reads its tiers as the unit tests build them."""
    policy = scenario["policy"]
    return {
        "id": case_id,
        "conf": conf_text(policy["actions"], policy["tiers"], policy.get("configurations")),
        "defaults": defaults,
        "objects": scenario_objects(scenario),
        "cycles": cycles,
        "repeat": repeat,
    }
