"""The PodGroup of a multi-node model (pure)."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from config.platform_labels import SERVING_ROLE_LABEL
from config.schema.quantity import canonical_quantity
from config.spec.model import ModelSpec, slice_group_name
from config.upstream.lws import LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL
from config.upstream.volcano import PODGROUP_API_VERSION


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
            **({"minResources": model.gang.requests_text()} if model.pod_group_holds_quota else {}),
            "queue": model.queue,
            "priorityClassName": cfg.priority_class,
            "subGroupPolicy": [subgroup],
        },
    }


def slice_podgroup_manifest(model: ModelSpec, index: int) -> dict[str, Any]:
    """One slice of a model with prefill and decode apart: the slice inside the model's domain
    (`networkTopology`), and per role a sub-group whose instances (LWS groups) start whole, each
    inside the role's domain. Volcano keys a sub-group by `<policy name>-<values of matchLabelKeys>`
    (volcano v1.15.1 pkg/scheduler/api/sub_job_info.go, getSubJobID), so each role has
    its own policy name and group-index key: prefill's instance 0 and decode's instance 0 are two
    sub-groups, never one."""
    subgroups = []
    for view, role in zip(model.role_views, model.slice_gang.roles, strict=True):
        subgroup: dict[str, Any] = {
            "name": role.role,
            "subGroupSize": role.instance.pods,
            "minSubGroups": role.min_instances,
            "labelSelector": {"matchLabels": {SERVING_ROLE_LABEL: role.role}},
            "matchLabelKeys": [LWS_GROUP_INDEX_LABEL],
        }
        topology = network_topology(view)
        if topology is not None:
            subgroup["networkTopology"] = topology
        subgroups.append(subgroup)
    spec: dict[str, Any] = {
        "minMember": model.slice_gang.min_member,
        "minResources": {k: canonical_quantity(v) for k, v in model.slice_gang.min_requests().items()},
        "queue": model.queue,
        "priorityClassName": model.config.priority_class,
    }
    topology = network_topology(model)
    if topology is not None:
        spec["networkTopology"] = topology
    spec["subGroupPolicy"] = subgroups
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": object_metadata(model, slice_group_name(model.name, index)),
        "spec": spec,
    }
