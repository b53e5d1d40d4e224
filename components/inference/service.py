"""The ClusterIP Service in front of a model's servers (pure)."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from components.observability.monitors import server_selector
from config.platform_labels import SERVING_ROLE_LABEL
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
            "selector": _selector(model),
            "ports": [{"name": "http", "port": model.api_port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _selector(model: ModelSpec) -> dict[str, str]:
    """The servers; with prefill and decode apart, decode's (its sidecar takes every request)."""
    if model.disaggregated:
        return {**server_selector(model), SERVING_ROLE_LABEL: "decode"}
    return server_selector(model)
