"""Helm values of the Volcano chart, from the typed config (pure).

Keys follow the upstream chart's `values.yaml`: the scheduler conf goes in as a YAML *string*
(`custom.scheduler_config_override`), the controller conf as a *mapping*
(`custom.controller_config_override`); the chart templates them differently.
"""

from __future__ import annotations

from typing import Any

from components.kubernetes.yaml_text import dump
from components.scheduling.controller_conf import controller_conf
from config.schema.merge import deep_merge
from config.sections.volcano import ResourceRequirements
from config.spec.images import volcano_image_registry, volcano_image_tag, volcano_pull_secret
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import scheduler_conf
from config.upstream.volcano import VOLCANO_METRICS_SERVICES


def _resources(requirements: ResourceRequirements) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requirements.requests:
        out["requests"] = dict(requirements.requests)
    if requirements.limits:
        out["limits"] = dict(requirements.limits)
    return out


def scheduler_conf_text(spec: PlatformSpec) -> str:
    conf = scheduler_conf(
        spec.config.volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models, spec.node_groups
    )
    return dump(conf)


def volcano_values(spec: PlatformSpec) -> dict[str, Any]:
    volcano = spec.config.volcano
    # The exact images are always spelled out, so a render and `images.txt` say what is pulled.
    basic: dict[str, Any] = {
        "image_registry": volcano_image_registry(spec.config),
        "image_tag_version": volcano_image_tag(spec.config),
    }
    pull_secret = volcano_pull_secret(spec.config)
    if pull_secret:
        basic["image_pull_secret"] = pull_secret
    replicas = volcano.replicas
    custom: dict[str, Any] = {
        "scheduler_replicas": replicas.scheduler,
        "controller_replicas": replicas.controller,
        "admission_replicas": replicas.admission,
        # Several replicas of a controller without leader election would act twice.
        "leader_elect_enable": max(replicas.scheduler, replicas.controller, replicas.admission) > 1,
        "admission_enable": volcano.admission,
        "scheduler_config_override": scheduler_conf_text(spec),
    }
    for component in ("scheduler", "controller", "admission"):
        requirements = getattr(volcano.resources, component)
        if requirements is not None:
            custom[f"{component}_resources"] = _resources(requirements)
    if volcano.node_selector:
        custom["default_ns"] = dict(volcano.node_selector)
    if volcano.tolerations:
        custom["default_tolerations"] = [t.model_dump(by_alias=True, exclude_none=True) for t in volcano.tolerations]
    observability = spec.config.observability
    if observability.enabled and observability.volcano:
        # The chart's defaults, pinned: the monitors and alerts read these endpoints.
        for flag, _, _ in VOLCANO_METRICS_SERVICES.values():
            custom[flag] = True
    controller = controller_conf(spec.config.topology)
    if controller:
        custom["controller_config_override"] = controller
    values: dict[str, Any] = {"custom": custom, "basic": basic}
    return deep_merge(values, volcano.values)
