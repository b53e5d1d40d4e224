"""A model's endpoint picker (pure): its config, ServiceAccount and Role, Deployment and Service.

The router is llm-d's (`config.upstream.inference_gateway`). Its pod follows the Inference
Extension v1.4.0 chart (`config/charts/epplib/templates/_deployment.yaml`, `_rbac.yaml`,
`_config.yaml`: ports, probes, one replica replaced with `Recreate`), and differs where the chart
leaves a choice: flow control on, one band per priority of the model's consumers, tracing off, the
metrics endpoint without token review (so no ClusterRole), reachable from the monitoring namespace
only (`components.isolation.network_policies`). The ext-proc port serves TLS with the router's own
certificate as the chart's does (`gateway.router.tls`), with the chart's DestinationRule on Istio;
the end-to-end test calls it the way the gateways do, over TLS without verifying.
"""

from __future__ import annotations

from typing import Any

from components.gateway.disaggregated_router import slice_profiles
from components.gateway.names import router_labels, router_name, router_selector
from components.kubernetes.yaml_text import dump
from components.observability.monitors import TENANT_METRIC_LABEL, pod_monitor
from config.platform_labels import SLICE_LABEL
from config.sections.observability import ObservabilityConfig
from config.spec.gateway import GatewaySpec, slice_router_name
from config.spec.model import ModelSpec
from config.upstream.inference_gateway import (
    DEFAULT_SCORERS,
    DESTINATION_RULE_API_VERSION,
    FAIRNESS_POLICIES,
    FLOW_CONTROL_GATE,
    INFERENCE_OBJECTIVE_GROUP,
    INFERENCE_POOL_GROUP,
    ROUTER_CONFIG_API_VERSION,
    ROUTER_CONFIG_DIR,
    ROUTER_CONFIG_FILE,
    ROUTER_GRPC_PORT,
    ROUTER_HEALTH_PORT,
    ROUTER_HEALTH_SERVICE,
    ROUTER_METRICS_PORT,
)

FAIRNESS_PLUGIN = "tenant-fairness"


def router_config(gateway: GatewaySpec, model: str) -> dict[str, Any]:
    """The `EndpointPickerConfig` the router reads: upstream's default scorers, and with flow
    control one band per consumer priority, each sharing its capacity between tenants by the
    chosen fairness policy (a tenant's fairness ID is its name)."""
    flow = gateway.config.router.flow_control
    config: dict[str, Any] = {
        "apiVersion": ROUTER_CONFIG_API_VERSION,
        "kind": "EndpointPickerConfig",
        "plugins": [{"type": scorer} for scorer, _ in DEFAULT_SCORERS],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [{"pluginRef": scorer, "weight": weight} for scorer, weight in DEFAULT_SCORERS],
            }
        ],
    }
    if not flow.enabled:
        return config
    config["featureGates"] = [FLOW_CONTROL_GATE]
    config["plugins"].append({"name": FAIRNESS_PLUGIN, "type": FAIRNESS_POLICIES[flow.fairness]})
    band: dict[str, Any] = {"fairnessPolicyRef": FAIRNESS_PLUGIN}
    if flow.max_bytes_per_band is not None:
        band["maxBytes"] = flow.max_bytes_per_band
    priorities = sorted(set(gateway.objectives(model).values()), reverse=True)
    config["flowControl"] = {
        "defaultRequestTTL": f"{gateway.queue_timeout_seconds}s",
        "defaultPriorityBand": dict(band),
        "priorityBands": [{"priority": p, **band} for p in priorities],
    }
    return config


def router_config_map(gateway: GatewaySpec, model: ModelSpec, index: int | None = None) -> dict[str, Any]:
    """The router's config; with `index`, slice `index`'s router of a model with prefill and
    decode apart (`components.gateway.disaggregated_router`)."""
    config = router_config(gateway, model.name)
    if index is not None:
        config = slice_profiles(config, model, index)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(model, index),
        "data": {ROUTER_CONFIG_FILE: dump(config)},
    }


def router_service_account(model: ModelSpec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(model)}


def router_role(model: ModelSpec) -> dict[str, Any]:
    """What the router reads, in its namespace only: the pods it picks from, its pool, and the
    objectives and model rewrites of its pool (the chart's two Roles as one)."""
    read = ["get", "list", "watch"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(model),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": read},
            {"apiGroups": [INFERENCE_POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
            {
                "apiGroups": [INFERENCE_OBJECTIVE_GROUP],
                "resources": ["inferenceobjectives", "inferencemodelrewrites"],
                "verbs": read,
            },
        ],
    }


def router_role_binding(model: ModelSpec) -> dict[str, Any]:
    name = router_name(model.name)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(model),
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": model.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }


def router_arguments(model: ModelSpec, tls: bool = True) -> list[str]:
    """The router's command line (v1.4.0 `pkg/epp/server/options.go`)."""
    return [
        "--pool-name",
        model.name,
        "--pool-namespace",
        model.namespace,
        "--pool-group",
        INFERENCE_POOL_GROUP,
        "--config-file",
        f"{ROUTER_CONFIG_DIR}/{ROUTER_CONFIG_FILE}",
        "--zap-encoder",
        "json",
        "--grpc-port",
        str(ROUTER_GRPC_PORT),
        "--grpc-health-port",
        str(ROUTER_HEALTH_PORT),
        "--metrics-port",
        str(ROUTER_METRICS_PORT),
        f"--secure-serving={'true' if tls else 'false'}",
        "--tracing=false",
        "--metrics-endpoint-auth=false",
    ]


def router_deployment(
    gateway: GatewaySpec, model: ModelSpec, image: str, pull_secret: str | None, index: int | None = None
) -> dict[str, Any]:
    """One router per model, or per slice (`index`) of a model with prefill and decode apart: the
    slices' routers share the model's pool, Service and account. It runs on the default
    scheduler: no accelerator, no queue."""
    router = gateway.config.router
    metadata = _metadata(model, index)
    resources = {"cpu": str(router.cpu), "memory": str(router.memory)}
    probe = {"grpc": {"port": ROUTER_HEALTH_PORT, "service": ROUTER_HEALTH_SERVICE}}
    pod_spec: dict[str, Any] = {
        "serviceAccountName": router_name(model.name),
        # The chart's default (it copies the pool's when it renders one): held requests are not
        # drained, they end with the router.
        "terminationGracePeriodSeconds": 130,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "epp",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "args": router_arguments(model, router.tls),
                "ports": [
                    {"name": "grpc", "containerPort": ROUTER_GRPC_PORT},
                    {"name": "grpc-health", "containerPort": ROUTER_HEALTH_PORT},
                    {"name": "metrics", "containerPort": ROUTER_METRICS_PORT},
                ],
                "livenessProbe": {**probe, "initialDelaySeconds": 5, "periodSeconds": 10},
                "readinessProbe": {**probe, "periodSeconds": 2},
                "resources": {"requests": resources, "limits": dict(resources)},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
                "env": [
                    {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
                "volumeMounts": [{"name": "config", "mountPath": ROUTER_CONFIG_DIR, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "config", "configMap": {"name": metadata["name"]}}],
    }
    if pull_secret is not None:
        pod_spec["imagePullSecrets"] = [{"name": pull_secret}]
    selector = {**router_selector(model), **_slice_label(index)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": router.replicas,
            # One queue at a time: a rolling update would run the old and the new router together.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": metadata["labels"]}, "spec": pod_spec},
        },
    }


def router_service(model: ModelSpec, tls: bool = True) -> dict[str, Any]:
    """What the gateway calls (ext-proc on gRPC) and Prometheus scrapes."""
    ext_proc: dict[str, Any] = {
        "name": "grpc-ext-proc",
        "port": ROUTER_GRPC_PORT,
        "targetPort": "grpc",
        "protocol": "TCP",
    }
    if not tls:
        ext_proc["appProtocol"] = "kubernetes.io/h2c"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(model),
        "spec": {
            "type": "ClusterIP",
            "selector": router_selector(model),
            "ports": [
                ext_proc,
                {"name": "http-metrics", "port": ROUTER_METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"},
            ],
        },
    }


def router_destination_rule(model: ModelSpec) -> dict[str, Any]:
    """Istio's rule for the router's Service: originate TLS, without verifying the router's own
    certificate (the Inference Extension chart's `istio` provider)."""
    name = router_name(model.name)
    return {
        "apiVersion": DESTINATION_RULE_API_VERSION,
        "kind": "DestinationRule",
        "metadata": _metadata(model),
        "spec": {
            "host": f"{name}.{model.namespace}.svc.cluster.local",
            "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}},
        },
    }


def router_pod_monitor(model: ModelSpec, observability: ObservabilityConfig) -> dict[str, Any]:
    """The router's series with the tenant's label. Not the `model` label the model's own series carry:
    the router's are the pool's (`inference_pool`), and the models' alerts and panels select by
    `model` (`up` among them)."""
    labels = {TENANT_METRIC_LABEL: model.tenant}
    return pod_monitor(_metadata(model), router_selector(model), "metrics", labels, observability)


def _metadata(model: ModelSpec, index: int | None = None) -> dict[str, Any]:
    name = slice_router_name(model.name, index)
    return {"name": name, "namespace": model.namespace, "labels": {**router_labels(model), **_slice_label(index)}}


def _slice_label(index: int | None) -> dict[str, str]:
    """A slice's router pods carry the slice, so each slice's Deployment selects only its own
    (the Service and the monitor select them all)."""
    return {} if index is None else {SLICE_LABEL: str(index)}
