"""Policies on the scheduling plane: queue quotas, priority classes, gangs and topology."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from config.schema.quantity import quantity_value
from config.upstream.volcano import QUEUE_WEIGHT_MAX
from policy.pods import GROUP_NAME_ANNOTATION, QUEUE_ANNOTATION, get, kind_of, pod_templates


def _amounts(resources: Any) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    if isinstance(resources, Mapping):
        for name, value in resources.items():
            try:
                out[str(name)] = quantity_value(str(value))
            except (ValueError, TypeError):
                continue
    return out


def _queue_quotas(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if kind_of(args.props) != "Queue" or not str(args.props.get("apiVersion", "")).startswith("scheduling.volcano.sh/"):
        return
    spec = args.props.get("spec") or {}
    weight = spec.get("weight")
    if isinstance(weight, (int, float)) and not 1 <= weight <= QUEUE_WEIGHT_MAX:
        report(f"weight {weight} is outside 1-{QUEUE_WEIGHT_MAX}", None)
    guarantee = _amounts(get(spec, "guarantee", "resource"))
    deserved = _amounts(spec.get("deserved"))
    capability = _amounts(spec.get("capability"))
    for resource, value in guarantee.items():
        if resource not in deserved:
            report(f"{resource} is guaranteed but has no deserved share", None)
        elif value > deserved[resource]:
            report(f"{resource}: guarantee {value} exceeds deserved {deserved[resource]}", None)
    for resource, value in deserved.items():
        if resource in capability and value > capability[resource]:
            report(f"{resource}: deserved {value} exceeds capability {capability[resource]}", None)


queue_quotas = ResourceValidationPolicy(
    name="queue-quotas",
    description="Queue quotas obey Volcano's admission rules: guarantee <= deserved <= capability.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_queue_quotas,
)


def _single_global_default(args: StackValidationArgs, report: ReportViolation) -> None:
    defaults = [
        r.props.get("metadata", {}).get("name", r.name)
        for r in args.resources
        if kind_of(r.props) == "PriorityClass" and r.props.get("globalDefault") is True
    ]
    if len(defaults) > 1:
        report(f"{len(defaults)} PriorityClasses are the global default ({', '.join(defaults)}); keep one", None)


single_global_default = StackValidationPolicy(
    name="single-global-default-priority",
    description="At most one PriorityClass is the global default.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_single_global_default,
)


def _pod_groups(args: StackValidationArgs) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {
        (str(get(r.props, "metadata", "namespace")), str(get(r.props, "metadata", "name"))): r.props
        for r in args.resources
        if kind_of(r.props) == "PodGroup"
    }


def _multi_node(args: StackValidationArgs) -> list[Any]:
    """LeaderWorkerSets that run pods. One scaled to zero (`replicas: 0`) has none, so it has no
    PodGroup either: an Inqueue PodGroup without pods would keep its quota reserved."""
    return [
        r for r in args.resources if kind_of(r.props) == "LeaderWorkerSet" and get(r.props, "spec", "replicas") != 0
    ]


def _gang_scheduled(args: StackValidationArgs, report: ReportViolation) -> None:
    groups = _pod_groups(args)
    for lws in _multi_node(args):
        namespace = str(get(lws.props, "metadata", "namespace"))
        name = get(lws.props, "metadata", "name")
        if (get(lws.props, "metadata", "annotations") or {}).get(QUEUE_ANNOTATION):
            continue  # LWS's own gang scheduling makes the PodGroups
        for path, template in pod_templates(lws.props):
            group = (get(template, "metadata", "annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if not group:
                report(
                    f"LeaderWorkerSet {namespace}/{name} {path}: pods belong to no PodGroup, so "
                    "a group can start half-way; annotate them with a PodGroup",
                    None,
                )
            elif (namespace, group) not in groups:
                report(f"LeaderWorkerSet {namespace}/{name} {path}: PodGroup `{group}` is not part of the stack", None)


multi_node_gang_scheduled = StackValidationPolicy(
    name="multi-node-gang-scheduled",
    description="Multi-node workloads are gang-scheduled through a PodGroup.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gang_scheduled,
)


def cluster_has_topology(args: StackValidationArgs) -> bool:
    """HyperNodes in the stack, or label discovery configured in the Volcano release."""
    for r in args.resources:
        if kind_of(r.props) == "HyperNode":
            return True
        if r.resource_type == "kubernetes:helm.sh/v3:Release" and get(
            r.props, "values", "custom", "controller_config_override", "networkTopologyDiscovery"
        ):
            return True
    return False


def _topology_constrained(args: StackValidationArgs, report: ReportViolation) -> None:
    if not cluster_has_topology(args):
        return
    groups = _pod_groups(args)
    for lws in _multi_node(args):
        namespace = str(get(lws.props, "metadata", "namespace"))
        name = get(lws.props, "metadata", "name")
        constrained = False
        for _, template in pod_templates(lws.props):
            group = groups.get(
                (namespace, str((get(template, "metadata", "annotations") or {}).get(GROUP_NAME_ANNOTATION)))
            )
            if group is None:
                continue
            spec = group.get("spec") or {}
            subgroups = spec.get("subGroupPolicy") or []
            constrained = bool(spec.get("networkTopology")) or (
                bool(subgroups) and all(isinstance(s, Mapping) and s.get("networkTopology") for s in subgroups)
            )
        if not constrained:
            report(
                f"LeaderWorkerSet {namespace}/{name}: the cluster has a network topology but the "
                "workload's PodGroup sets no networkTopology; its pods may span slow links",
                None,
            )


multi_node_topology = StackValidationPolicy(
    name="multi-node-topology",
    description="On a cluster with a topology, multi-node workloads constrain their network span.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_topology_constrained,
)

RESOURCE_POLICIES = [queue_quotas]
STACK_POLICIES = [single_global_default, multi_node_gang_scheduled, multi_node_topology]
