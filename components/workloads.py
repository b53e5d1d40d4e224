"""Manifests of a model's objects (pure): Deployment or LeaderWorkerSet, PodGroup, Service.

Multi-node models get one PodGroup whose `subGroupPolicy` makes every LWS group its own gang
with the model's topology constraint: sized for one group (`minMember`, `minResources`), so
groups start independently, and constrained per group, so replicas are not forced into one
domain. The pods name that PodGroup; LWS's own gang scheduling, which would overwrite the name
with topology-less PodGroups of its own, stays off.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from components.pod_template import pod_template
from config.platform_labels import ALLOW_UNCONFINED_ANNOTATION, model_labels, model_selector
from config.quantity import format_amount, quantity_value
from config.spec import ModelSpec
from config.upstream import (
    LWS_API_VERSION,
    LWS_GROUP_INDEX_LABEL,
    LWS_NAME_LABEL,
    LWS_WORKER_INDEX_LABEL,
    PODGROUP_API_VERSION,
    QUEUE_ANNOTATION,
    SKIP_AWAIT_ANNOTATION,
)


def object_metadata(model: ModelSpec, name: str) -> dict[str, Any]:
    """Name, namespace and the platform's labels of one of a model's objects."""
    return {
        "name": name,
        "namespace": model.namespace,
        "labels": {**model.config.labels, **model_labels(model.name, model.tenant)},
    }


def _workload_metadata(model: ModelSpec) -> dict[str, Any]:
    metadata = object_metadata(model, model.name)
    if model.config.seccomp_profile == "Unconfined":
        # The stack asked for it explicitly; the policy pack accepts Unconfined only with this mark.
        metadata["annotations"] = {ALLOW_UNCONFINED_ANNOTATION: "true"}
    return metadata


def _replicas(model: ModelSpec) -> dict[str, int]:
    """`spec.replicas`, unless an autoscaler owns it: Pulumi applies with Server-Side Apply, and a
    count in the manifest would be re-applied on every `pulumi up`, undoing the autoscaler. Left
    out, the field belongs to whoever set it last (the autoscaler; 1 on creation)."""
    return {} if model.config.autoscaling is not None else {"replicas": model.config.replicas}


def deployment_manifest(model: ModelSpec) -> dict[str, Any]:
    cfg = model.config
    rollout = cfg.rollout
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _workload_metadata(model),
        "spec": {
            **_replicas(model),
            "selector": {"matchLabels": model_selector(model.name)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": rollout.max_unavailable, "maxSurge": rollout.max_surge},
            },
            # Loading weights can outlast the default 10-minute progress deadline.
            "progressDeadlineSeconds": cfg.startup.load_timeout_seconds + 600,
            "template": pod_template(model, "server"),
        },
    }


def rollout_timeouts(model: ModelSpec) -> tuple[str, str]:
    """How long `pulumi up` may wait for a Deployment (create, update). Replicas load their weights
    in parallel on create; an update replaces `maxUnavailable` of them at a time."""
    cfg = model.config
    load = cfg.startup.load_timeout_seconds
    step = cfg.rollout.max_unavailable if isinstance(cfg.rollout.max_unavailable, int) else 1
    rounds = -(-max(cfg.planned_replicas, 1) // max(step, 1))
    return f"{load + 600}s", f"{rounds * load + 600}s"


def service_manifest(model: ModelSpec) -> dict[str, Any]:
    """ClusterIP Service in front of the servers (the leaders, for multi-node models). `pulumi up`
    does not wait for its endpoints: they appear only once the weights are loaded (and never for a
    model scaled to zero); the workload's own rollout is what is awaited."""
    selector = (
        {LWS_NAME_LABEL: model.name, LWS_WORKER_INDEX_LABEL: "0"} if model.multi_node else model_selector(model.name)
    )
    metadata = object_metadata(model, model.service_name)
    metadata["annotations"] = {SKIP_AWAIT_ANNOTATION: "true"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": model.config.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def leaderworkerset_manifest(model: ModelSpec) -> dict[str, Any]:
    """Every field the LWS webhook or CRD would default is spelled out, so previews show no
    phantom diffs."""
    cfg = model.config
    metadata = _workload_metadata(model)
    if not model.own_pod_group:
        # LWS gang scheduling reads the queue from the LeaderWorkerSet itself.
        metadata["annotations"] = {**metadata.get("annotations", {}), QUEUE_ANNOTATION: model.queue}
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": metadata,
        "spec": {
            **_replicas(model),
            "leaderWorkerTemplate": {
                "size": cfg.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": pod_template(model, "leader"),
                "workerTemplate": pod_template(model, "worker"),
            },
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {
                    "maxUnavailable": cfg.rollout.max_unavailable,
                    "maxSurge": cfg.rollout.max_surge,
                    "partition": 0,
                },
            },
            # LeaderReady would deadlock: the leader waits for workers created only once it is Ready.
            "startupPolicy": "LeaderCreated",
            "networkConfig": {"subdomainPolicy": "Shared"},
        },
    }


def group_resources(model: ModelSpec) -> dict[str, str]:
    """Requests of one LWS group: what a gang needs before any of it starts."""
    out: dict[str, str] = {}
    for resource, quantity in model.pod_requests.items():
        total = quantity_value(quantity) * Decimal(model.pods_per_replica)
        out[resource] = format_amount(total)
    return out


def network_topology(model: ModelSpec) -> dict[str, Any] | None:
    constraint = model.config.topology
    if constraint is None:
        return None
    out: dict[str, Any] = {"mode": constraint.mode}
    if constraint.highest_tier_name is not None:
        out["highestTierName"] = constraint.highest_tier_name
    elif constraint.highest_tier is not None:
        out["highestTierAllowed"] = constraint.highest_tier
    return out


def podgroup_manifest(model: ModelSpec) -> dict[str, Any]:
    cfg = model.config
    subgroup: dict[str, Any] = {
        "name": "lws-group",
        "subGroupSize": cfg.nodes_per_replica,
        "labelSelector": {"matchLabels": {LWS_NAME_LABEL: model.name}},
        "matchLabelKeys": [LWS_GROUP_INDEX_LABEL],
    }
    topology = network_topology(model)
    if topology is not None:
        subgroup["networkTopology"] = topology
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": object_metadata(model, model.pod_group_name),
        "spec": {
            "minMember": cfg.nodes_per_replica,
            **({"minResources": group_resources(model)} if model.pod_group_holds_quota else {}),
            "queue": model.queue,
            "priorityClassName": cfg.priority_class,
            "subGroupPolicy": [subgroup],
        },
    }
