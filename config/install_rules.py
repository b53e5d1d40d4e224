"""Checks of the Volcano and LeaderWorkerSet installs: component resources the API server would
refuse, and chart-value escape hatches that would silently replace what the program generates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from config.errors import Problem, join_path
from config.quantity import quantity_value
from config.spec import PlatformSpec

# Chart values the program writes from typed settings (`components/volcano_values.py`,
# `components/lws.py`); a test keeps these lists equal to what they generate. An override in
# `values` would make the summary, the checks and the cluster disagree.
GENERATED_VOLCANO_VALUES: dict[str, dict[str, str]] = {
    "basic": {
        "image_registry": "volcano.imageRegistry (or cluster.mirror.registry)",
        "image_tag_version": "volcano.imageTag",
        "image_pull_secret": "volcano.imagePullSecret (or cluster.mirror.pullSecret)",
    },
    "custom": {
        "scheduler_config_override": "volcano.scheduler",
        "controller_config_override": "topology (hyperNodes, discovery)",
        "scheduler_replicas": "volcano.replicas.scheduler",
        "controller_replicas": "volcano.replicas.controller",
        "admission_replicas": "volcano.replicas.admission",
        "leader_elect_enable": "volcano.replicas (on with more than one replica)",
        "admission_enable": "volcano.admission",
        "scheduler_resources": "volcano.resources.scheduler",
        "controller_resources": "volcano.resources.controller",
        "admission_resources": "volcano.resources.admission",
        "default_ns": "volcano.nodeSelector",
        "default_tolerations": "volcano.tolerations",
        "scheduler_metrics_enable": "observability.volcano",
        "controller_metrics_enable": "observability.volcano",
    },
}
GENERATED_LWS_VALUES: dict[str, str] = {
    "replicaCount": "lws.replicas",
    "gangSchedulingManagement": "lws.gangScheduling",
    "image": "lws.imageRepository (or cluster.mirror.registry)",
    "imagePullSecrets": "lws.imagePullSecret (or cluster.mirror.pullSecret)",
}


def check_installs(spec: PlatformSpec) -> list[Problem]:
    return [*_component_resources(spec), *_value_overrides(spec)]


def _component_resources(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for component in ("scheduler", "controller", "admission"):
        requirements = getattr(spec.config.volcano.resources, component)
        if requirements is None:
            continue
        for resource, limit in requirements.limits.items():
            request = requirements.requests.get(resource)
            if request is not None and quantity_value(limit) < quantity_value(request):
                problems.append(
                    Problem(
                        join_path("volcano", "resources", component, "limits", resource),
                        f"the limit {limit} is below the request {request}; the API server rejects the pod",
                        "raise the limit to at least the request",
                        got=limit,
                    )
                )
    return problems


def _value_overrides(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    volcano_values: Mapping[str, Any] = spec.config.volcano.values
    for section, keys in GENERATED_VOLCANO_VALUES.items():
        given = volcano_values.get(section)
        if not isinstance(given, Mapping):
            continue
        for key in given:
            if key in keys:
                problems.append(_override(join_path("volcano", "values", section, key), keys[key]))
    for key in spec.config.lws.values:
        if key in GENERATED_LWS_VALUES:
            problems.append(_override(join_path("lws", "values", key), GENERATED_LWS_VALUES[key]))
    return problems


def _override(path: str, typed: str) -> Problem:
    return Problem(
        path,
        "the program writes this chart value from typed settings; overriding it here would make the summary and "
        "the checks describe something other than what runs",
        f"set `{typed}` instead",
    )
