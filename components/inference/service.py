"""The ClusterIP Service in front of a model's servers (pure)."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from components.observability.monitors import server_selector
from config.spec.model import ModelSpec
from config.upstream.kubernetes import SKIP_AWAIT_ANNOTATION


def service_manifest(model: ModelSpec) -> dict[str, Any]:
    """ClusterIP Service in front of the servers (the leaders, for multi-node models). `pulumi up`
    does not wait for its endpoints: they appear only once the weights are loaded (and never for a
    model scaled to zero); the workload's own rollout is what is awaited."""
    metadata = object_metadata(model, model.service_name)
    metadata["annotations"] = {SKIP_AWAIT_ANNOTATION: "true"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": "ClusterIP",
            "selector": server_selector(model),
            "ports": [{"name": "http", "port": model.config.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }
