"""The ClusterIP Service in front of a model's servers (pure)."""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from config.platform_labels import model_selector
from config.spec.model import ModelSpec
from config.upstream.kubernetes import SKIP_AWAIT_ANNOTATION
from config.upstream.lws import LWS_NAME_LABEL, LWS_WORKER_INDEX_LABEL


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
