"""Manifests of the scrape configuration (pure): a PodMonitor per model, ServiceMonitors for Volcano;
with Managed Service for Prometheus a PodMonitoring for each.

vLLM serves `/metrics` on its HTTP port, outside `--api-key`. A multi-node model's metrics come
from the leader only (the API server process; workers run Ray and serve no HTTP), so its
PodMonitor selects the LeaderWorkerSet's leaders. Every scraped series (and `up`) gets the labels
`model` and `tenant`, the stack's own names, so rules and dashboards select a model without
guessing at served names or namespaces. prometheus-operator writes them as constants; Managed
Service for Prometheus has no constant target label, so its PodMonitoring copies them from the
pod labels the platform sets to the same values (`targetLabels.fromPod`, prometheus-engine
v0.17.2 `pod_config.go`).
"""

from __future__ import annotations

from typing import Any

from components.inference.metadata import object_metadata
from config.platform_labels import (
    MANAGED_BY,
    MODEL_LABEL,
    MODEL_METRIC_LABEL,
    SERVING_ROLE_LABEL,
    SLICE_LABEL,
    TENANT_LABEL,
    model_selector,
)
from config.sections.observability import ObservabilityConfig
from config.spec.model import ModelSpec
from config.upstream.lws import LWS_NAME_LABEL, LWS_WORKER_INDEX_LABEL
from config.upstream.monitoring import GMP_API_VERSION, MONITORING_API_VERSION
from config.upstream.volcano import (
    VOLCANO_METRICS_PORT_NAME,
    VOLCANO_METRICS_PORTS,
    VOLCANO_METRICS_SERVICES,
    VOLCANO_NAMESPACE,
)

TENANT_METRIC_LABEL = "tenant"
SLICE_METRIC_LABEL = "slice"
SERVING_ROLE_METRIC_LABEL = "serving_role"
METRICS_PATH = "/metrics"
POD_LABEL_OF = {MODEL_METRIC_LABEL: MODEL_LABEL, TENANT_METRIC_LABEL: TENANT_LABEL}
"""The pod label the platform sets to each constant series label's value (for `fromPod`)."""


def server_selector(model: ModelSpec) -> dict[str, str]:
    """The pods that serve the model's API (and its metrics)."""
    if model.disaggregated:  # the servers of both roles: each instance's first pod
        return {**model_selector(model.name), LWS_WORKER_INDEX_LABEL: "0"}
    if model.multi_node:
        return {LWS_NAME_LABEL: model.name, LWS_WORKER_INDEX_LABEL: "0"}
    return model_selector(model.name)


def pod_monitor_manifest(model: ModelSpec, observability: ObservabilityConfig) -> dict[str, Any]:
    labels = {MODEL_METRIC_LABEL: model.name, TENANT_METRIC_LABEL: model.tenant}
    # Each series of a model with prefill and decode apart says its slice and role, which the
    # roles' autoscalers select by.
    from_pods = (
        {SLICE_METRIC_LABEL: SLICE_LABEL, SERVING_ROLE_METRIC_LABEL: SERVING_ROLE_LABEL} if model.disaggregated else {}
    )
    metadata = object_metadata(model, model.name)
    return pod_monitor(metadata, server_selector(model), "http", labels, observability, from_pods)


def _meta_label(label: str) -> str:
    """Prometheus' name for a pod label in service discovery (every other character becomes `_`)."""
    return "__meta_kubernetes_pod_label_" + "".join(c if c.isalnum() else "_" for c in label)


def pod_monitor(
    metadata: dict[str, Any],
    selector: dict[str, str],
    port: str,
    labels: dict[str, str],
    observability: ObservabilityConfig,
    from_pods: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A monitor of the pods `selector` picks, scraped on their `port` at the stack's interval, each
    series given `labels` (constants) and the pod labels `from_pods` names (series label -> pod
    label); a PodMonitor carries the labels the operator selects monitors by."""
    if observability.managed:
        copied = {**{key: POD_LABEL_OF[key] for key in labels}, **(from_pods or {})}
        return _pod_monitoring(metadata, selector, port, copied, observability)
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
                    ]
                    + [
                        {"action": "replace", "sourceLabels": [_meta_label(pod_label)], "targetLabel": key}
                        for key, pod_label in (from_pods or {}).items()
                    ],
                }
            ],
        },
    }


def _pod_monitoring(
    metadata: dict[str, Any],
    selector: dict[str, str],
    port: str | int,
    from_pods: dict[str, str],
    observability: ObservabilityConfig,
) -> dict[str, Any]:
    """A PodMonitoring (Managed Service for Prometheus) of the pods `selector` picks in its
    namespace; `job` is its name, `namespace` always set, series labels copied from pod labels."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": selector},
        "endpoints": [{"port": port, "path": METRICS_PATH, "interval": f"{observability.scrape_interval_seconds}s"}],
    }
    if from_pods:
        spec["targetLabels"] = {"fromPod": [{"from": pod_label, "to": key} for key, pod_label in from_pods.items()]}
    return {"apiVersion": GMP_API_VERSION, "kind": "PodMonitoring", "metadata": metadata, "spec": spec}


def volcano_monitors(observability: ObservabilityConfig) -> list[dict[str, Any]]:
    """The scheduler's and the controller's monitors: ServiceMonitors of their metrics Services, or
    with Managed Service for Prometheus a PodMonitoring of their pods by port number, named as the
    Service so `job` is the same either way."""
    if not observability.managed:
        return volcano_service_monitors(observability)
    return [
        _pod_monitoring(
            {"name": service, "namespace": VOLCANO_NAMESPACE, "labels": dict(MANAGED_BY)},
            dict(labels),
            VOLCANO_METRICS_PORTS[component],
            {},
            observability,
        )
        for component, (_, service, labels) in VOLCANO_METRICS_SERVICES.items()
    ]


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
