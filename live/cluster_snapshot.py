"""A recorded cluster for the pull-request what-if: what `whatif --from` reads, and nothing else.

The default branch's preview records it with the read-only preview identity and keeps it as a
workflow artifact; same-repository pull requests read it back, so their offline diff can say what
the scheduler will do with the change without any credential. Artifacts are readable by whoever can
read the repository, so the snapshot is an allow-list: per kind, only the fields the what-if's two
engines read (the Python model in `whatif/`, and Volcano v1.15.1's scheduling code with the
Kubernetes plugins it calls, `volcano-session/`) leave the cluster. Whatever else an object holds
(environment, commands, probes and their headers, lifecycle hooks, ephemeral containers, volumes'
sources, every other annotation, field managers) stays behind, and so do the kinds the what-if never
reads (Services, Deployments, Gateways, CRDs...). A new field a workload grows is left out until
someone adds it here, on purpose.
"""

from __future__ import annotations

from typing import Any

from live.cluster_state import KINDS, ClusterState

SNAPSHOT_SCHEMA = "v1"
"""`apiVersion` of the List written: kubectl's own, so `--from` and kubectl read it alike."""

Keep = dict[str, Any]
"""A field -> `True` (kept whole), a `Keep` (its fields), or `[Keep]` (a list, each item's fields);
under `annotations`/`labels`, a frozenset of the keys kept."""
ALL: Any = True

_META = {"name": ALL, "namespace": ALL, "uid": ALL, "creationTimestamp": ALL, "ownerReferences": ALL}
_RESOURCES = {"requests": ALL, "limits": ALL, "claims": ALL}
_PORTS = [{"name": ALL, "containerPort": ALL, "hostPort": ALL, "hostIP": ALL, "protocol": ALL}]
_CONTAINER = {"name": ALL, "image": ALL, "resources": _RESOURCES, "restartPolicy": ALL, "ports": _PORTS}
_CONTAINER_STATUS = [{"name": ALL, "resources": ALL, "allocatedResources": ALL}]
_PREEMPTABLE = "volcano.sh/preemptable"

KEPT: dict[str, Keep] = {
    "Node": {
        "metadata": {
            **_META,
            "labels": ALL,  # selectors, tiers, pools and HyperNodes match any label
            "annotations": frozenset(
                {
                    "volcano.sh/offline-job-evicting",
                    "volcano.sh/oversubscription-cpu",
                    "volcano.sh/oversubscription-memory",
                }
            ),
        },
        "spec": {"taints": ALL, "unschedulable": ALL},
        "status": {"allocatable": ALL, "capacity": ALL, "conditions": ALL, "images": ALL},
    },
    "Pod": {
        "metadata": {
            **_META,
            "deletionTimestamp": ALL,
            "labels": ALL,  # sub-groups, affinity and spread select pods by any label
            "annotations": frozenset(
                {
                    "scheduling.k8s.io/group-name",
                    _PREEMPTABLE,
                    "volcano.sh/revocable-zone",
                    "volcano.sh/task-spec",
                    "volcano.sh/task-priority",
                    "volcano.sh/numa-topology-policy",
                    "volcano.sh/topology-decision",
                    "scheduling.volcano.sh/queue-allocation-gate",
                    "scheduling.volcano.sh/queue-name",
                }
            ),
        },
        "spec": {
            "nodeName": ALL,
            "schedulerName": ALL,
            "priority": ALL,
            "priorityClassName": ALL,
            "preemptionPolicy": ALL,
            "nodeSelector": ALL,
            "affinity": ALL,
            "topologySpreadConstraints": ALL,
            "tolerations": ALL,
            "overhead": ALL,
            "resources": ALL,
            "schedulingGates": ALL,
            "resourceClaims": ALL,
            "containers": [_CONTAINER],
            "initContainers": [_CONTAINER],
            # Claims only: Volcano looks a pod's claims up; any other source says where data lives.
            "volumes": [{"name": ALL, "persistentVolumeClaim": ALL, "ephemeral": ALL}],
        },
        "status": {
            "phase": ALL,
            "conditions": [{"type": ALL, "status": ALL, "reason": ALL}],
            "nominatedNodeName": ALL,
            "containerStatuses": _CONTAINER_STATUS,
            "initContainerStatuses": _CONTAINER_STATUS,
        },
    },
    "PodGroup": {
        "metadata": {
            **_META,
            "labels": frozenset({_PREEMPTABLE}),
            "annotations": frozenset(
                {
                    _PREEMPTABLE,
                    "volcano.sh/job-allocated-hypernode",
                    "volcano.sh/revocable-zone",
                    "volcano.sh/jdb-min-available",
                    "volcano.sh/jdb-max-unavailable",
                    "volcano.sh/sla-waiting-time",
                    "sla-waiting-time",
                }
            ),
        },
        "spec": ALL,
        "status": {"phase": ALL, "conditions": ALL, "running": ALL, "succeeded": ALL, "failed": ALL},
    },
    "Queue": {
        "metadata": {**_META, "annotations": frozenset({"volcano.sh/hierarchy", "volcano.sh/hierarchy-weights"})},
        "spec": ALL,
        "status": {"state": ALL, "allocated": ALL},
    },
    "HyperNode": {"metadata": {**_META, "labels": ALL}, "spec": ALL},
    "PriorityClass": {
        "metadata": {"name": ALL, "uid": ALL, "creationTimestamp": ALL},
        "value": ALL,
        "globalDefault": ALL,
        "preemptionPolicy": ALL,
    },
    "PersistentVolumeClaim": {"metadata": {"name": ALL, "namespace": ALL}},
}
"""What leaves the cluster, per kind; a kind not here leaves nothing."""


def snapshot_list(state: ClusterState) -> dict[str, Any]:
    """Every object of the kinds the what-if reads, as a Kubernetes `List`, each with only the
    fields `KEPT` names (item order kept: both engines list nodes in the dump's order)."""
    items = [
        {"apiVersion": obj.get("apiVersion"), "kind": kind.kind, **_kept(obj, KEPT[kind.kind])}
        for kind in KINDS
        if kind.kind in KEPT
        for obj in getattr(state, kind.key)
        if isinstance(obj, dict)
    ]
    return {"apiVersion": SNAPSHOT_SCHEMA, "kind": "List", "items": items}


def _kept(value: Any, keep: Any) -> Any:
    if keep is ALL:
        return value
    if isinstance(keep, frozenset):
        return {k: v for k, v in value.items() if k in keep} if isinstance(value, dict) else None
    if isinstance(keep, list):
        return [_kept(item, keep[0]) for item in value] if isinstance(value, list) else None
    if not isinstance(value, dict):
        return None
    out: dict[str, Any] = {}
    for key, inner in keep.items():
        if key in value and key not in ("apiVersion", "kind"):
            kept = _kept(value[key], inner)
            if kept is not None:
                out[key] = kept
    return out
