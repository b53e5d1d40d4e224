"""The Deployment of a single-node model (pure), and how long `pulumi up` may wait for it."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import replicas_field, workload_metadata
from components.inference.pod_template import pod_template
from config.platform_labels import model_selector
from config.spec.model import ModelSpec


def deployment_manifest(model: ModelSpec) -> dict[str, Any]:
    cfg = model.config
    rollout = cfg.rollout
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": workload_metadata(model),
        "spec": {
            **replicas_field(model),
            "selector": {"matchLabels": model_selector(model.name)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": rollout.max_unavailable, "maxSurge": rollout.max_surge},
            },
            # Loading weights can outlast the default 10-minute progress deadline.
            "progressDeadlineSeconds": cfg.startup.load_timeout_seconds + cfg.startup.place_timeout_seconds,
            "template": pod_template(model, "server"),
        },
    }


def rollout_timeouts(model: ModelSpec) -> tuple[str, str]:
    """How long `pulumi up` may wait for a model's workload (create, update): placing and pulling,
    then loading. Replicas load their weights in parallel on create; an update replaces
    `maxUnavailable` of them at a time."""
    cfg = model.config
    load, place = cfg.startup.load_timeout_seconds, cfg.startup.place_timeout_seconds
    step = cfg.rollout.max_unavailable if isinstance(cfg.rollout.max_unavailable, int) else 1
    rounds = -(-max(cfg.planned_replicas, 1) // max(step, 1))
    return f"{load + place}s", f"{rounds * load + place}s"
