"""Manifests of the scrape configuration (pure): a PodMonitor per model, ServiceMonitors for Volcano.

vLLM serves `/metrics` on its HTTP port, outside `--api-key`. A multi-node model's metrics come
from the leader only (the API server process; workers run Ray and serve no HTTP), so its
PodMonitor selects the LeaderWorkerSet's leaders. Every scraped series (and `up`) gets the labels
`model` and `tenant`, the stack's own names, so rules and dashboards select a model without
guessing at served names or namespaces.
"""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from config.platform_labels import MANAGED_BY, MODEL_METRIC_LABEL, SERVING_ROLE_LABEL, SLICE_LABEL, model_selector
from config.sections.observability import ObservabilityConfig
from config.spec.model import ModelSpec
from config.upstream.lws import LWS_NAME_LABEL, LWS_WORKER_INDEX_LABEL
from config.upstream.monitoring import MONITORING_API_VERSION
from config.upstream.volcano import VOLCANO_METRICS_PORT_NAME, VOLCANO_METRICS_SERVICES, VOLCANO_NAMESPACE

TENANT_METRIC_LABEL = "tenant"
SLICE_METRIC_LABEL = "slice"
SERVING_ROLE_METRIC_LABEL = "serving_role"
METRICS_PATH = "/metrics"


def server_selector(model: ModelSpec) -> dict[str, str]:
    """The pods that serve the model's API (and its metrics)."""
    if model.disaggregated:  # the servers of both roles: each instance's first pod
        return {**model_selector(model.name), LWS_WORKER_INDEX_LABEL: "0"}
    if model.multi_node:
        return {LWS_NAME_LABEL: model.name, LWS_WORKER_INDEX_LABEL: "0"}
    return model_selector(model.name)


def pod_monitor_manifest(model: ModelSpec, observability: ObservabilityConfig) -> dict[str, Any]:
    labels = {MODEL_METRIC_LABEL: model.name, TENANT_METRIC_LABEL: model.tenant}
    monitor = pod_monitor(object_metadata(model, model.name), server_selector(model), "http", labels, observability)
    if model.disaggregated:
        # Each series says its slice and role, which the roles' autoscalers select by.
        endpoint = monitor["spec"]["podMetricsEndpoints"][0]
        endpoint["relabelings"] += [
            {"action": "replace", "sourceLabels": [_meta_label(SLICE_LABEL)], "targetLabel": SLICE_METRIC_LABEL},
            {
                "action": "replace",
                "sourceLabels": [_meta_label(SERVING_ROLE_LABEL)],
                "targetLabel": SERVING_ROLE_METRIC_LABEL,
            },
        ]
    return monitor


def _meta_label(label: str) -> str:
    """Prometheus' name for a pod label in service discovery (every other character becomes `_`)."""
    return "__meta_kubernetes_pod_label_" + "".join(c if c.isalnum() else "_" for c in label)


def pod_monitor(
    metadata: dict[str, Any],
    selector: dict[str, str],
    port: str,
    labels: dict[str, str],
    observability: ObservabilityConfig,
) -> dict[str, Any]:
    """A PodMonitor of the pods `selector` picks, scraped on their `port` at the stack's interval,
    each series given `labels`; the monitor carries the labels the operator selects monitors by."""
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PodMonitor",
        "metadata": {**metadata, "labels": {**metadata["labels"], **observability.labels}},
        "spec": {
            "selector": {"matchLabels": selector},
            "podMetricsEndpoints": [
                {
                    "port": port,
                    "path": METRICS_PATH,
                    "interval": f"{observability.scrape_interval_seconds}s",
                    "relabelings": [
                        {"action": "replace", "targetLabel": key, "replacement": value} for key, value in labels.items()
                    ],
                }
            ],
        },
    }


def volcano_service_monitors(observability: ObservabilityConfig) -> list[dict[str, Any]]:
    """The scheduler's and the controller's metrics Services (the chart ships no monitors, and its
    containers declare no ports, so a PodMonitor would find nothing)."""
    return [
        {
            "apiVersion": MONITORING_API_VERSION,
            "kind": "ServiceMonitor",
            "metadata": {
                "name": f"volcano-{component}",
                "namespace": VOLCANO_NAMESPACE,
                "labels": {**MANAGED_BY, **observability.labels},
            },
            "spec": {
                "selector": {"matchLabels": dict(labels)},
                "endpoints": [
                    {
                        "port": VOLCANO_METRICS_PORT_NAME,
                        "path": METRICS_PATH,
                        "interval": f"{observability.scrape_interval_seconds}s",
                    }
                ],
            },
        }
        for component, (_, _, labels) in VOLCANO_METRICS_SERVICES.items()
    ]
