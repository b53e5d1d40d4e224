"""The PodGroup of a multi-node model (pure)."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from config.spec.model import ModelSpec
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
