"""What connects a tenant's request to a model's replicas (pure): the shared Gateway with a listener
per tenant hostname, an HTTPRoute per consuming tenant, the model's InferencePool, and one
InferenceObjective per band of its consumers.

With `gateway.tenantHeaders: route` a route sets the request's objective and fairness headers from
the tenant it serves, overwriting what a client sent. That holds the band only where the gateway
applies a route's header filter before it calls the router; Envoy-based gateways apply it when
they forward the request, after (Envoy's router filter adds a route's headers), which preflight
reports from the GatewayClass's controller. With `client`, a proxy in front sets them.
"""

from __future__ import annotations

from typing import Any

from components.gateway.names import listener_names, objective_name, route_name, router_name
from components.inference.metadata import object_metadata
from components.observability.monitors import server_selector
from config.platform_labels import MANAGED_BY
from config.spec.gateway import GENERATION_SECONDS, Consumer, GatewaySpec
from config.spec.model import ModelSpec
from config.upstream.inference_gateway import (
    FAIRNESS_HEADER,
    GATEWAY_API_VERSION,
    GATEWAY_GROUP,
    INFERENCE_OBJECTIVE_API_VERSION,
    INFERENCE_POOL_API_VERSION,
    INFERENCE_POOL_GROUP,
    MODEL_HEADER,
    OBJECTIVE_HEADER,
    ROUTER_GRPC_PORT,
)
from config.upstream.kubernetes import NAMESPACE_NAME_LABEL


def inference_pool(gateway: GatewaySpec, model: ModelSpec) -> dict[str, Any]:
    """The model's serving pods (the Service's selector: the leaders of a multi-node model) on the
    port vLLM serves, picked by the model's own router."""
    return {
        "apiVersion": INFERENCE_POOL_API_VERSION,
        "kind": "InferencePool",
        "metadata": object_metadata(model, model.name),
        "spec": {
            "selector": {"matchLabels": server_selector(model)},
            "targetPorts": [{"number": model.config.port}],
            "endpointPickerRef": {
                "kind": "Service",
                "name": router_name(model.name),
                "port": {"number": ROUTER_GRPC_PORT},
                "failureMode": gateway.config.router.failure_mode,
            },
        },
    }


def inference_objectives(gateway: GatewaySpec, model: ModelSpec) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": INFERENCE_OBJECTIVE_API_VERSION,
            "kind": "InferenceObjective",
            "metadata": object_metadata(model, objective_name(model.name, priority_class)),
            "spec": {
                "priority": band,
                "poolRef": {"group": INFERENCE_POOL_GROUP, "kind": "InferencePool", "name": model.name},
            },
        }
        for priority_class, band in gateway.objectives(model.name).items()
    ]


def http_route(gateway: GatewaySpec, model: ModelSpec, consumer: Consumer) -> dict[str, Any]:
    shared = gateway.config.gateway
    served = model.config.served_model_name or model.name
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": object_metadata(model, route_name(model.name, consumer.tenant)),
        "spec": {
            "parentRefs": [
                {"name": shared.name, "namespace": shared.namespace, "sectionName": listener}
                for listener in listener_names(consumer.tenant, consumer.hostnames)
            ],
            "hostnames": list(consumer.hostnames),
            "rules": [
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/"},
                            "headers": [{"type": "Exact", "name": MODEL_HEADER, "value": served}],
                        }
                    ],
                    **_tenant_headers(gateway, model, consumer),
                    "backendRefs": [{"group": INFERENCE_POOL_GROUP, "kind": "InferencePool", "name": model.name}],
                    "timeouts": {"request": f"{gateway.queue_timeout_seconds + GENERATION_SECONDS}s"},
                }
            ],
        },
    }


def _tenant_headers(gateway: GatewaySpec, model: ModelSpec, consumer: Consumer) -> dict[str, Any]:
    if gateway.config.tenant_headers != "route":
        return {}
    headers = [
        {"name": OBJECTIVE_HEADER, "value": objective_name(model.name, consumer.priority_class)},
        {"name": FAIRNESS_HEADER, "value": consumer.tenant},
    ]
    return {"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": headers}}]}


def shared_gateway(gateway: GatewaySpec, owners: dict[str, set[str]]) -> dict[str, Any]:
    """The Gateway: per consuming tenant and hostname an HTTP listener that takes routes only from
    the namespaces of the models that tenant consumes (`owners`: consumer -> those namespaces),
    selected by `kubernetes.io/metadata.name`, which the API server sets to each namespace's name
    (a label anyone who may edit a namespace could set would let any namespace's routes in)."""
    shared = gateway.config.gateway
    listeners = []
    for tenant in sorted(owners):
        hostnames = gateway.hostnames[tenant]
        for listener, hostname in zip(listener_names(tenant, hostnames), hostnames, strict=True):
            selector = {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(owners[tenant])}
            listeners.append(
                {
                    "name": listener,
                    "hostname": hostname,
                    "port": shared.port,
                    "protocol": "HTTP",
                    "allowedRoutes": {
                        "namespaces": {"from": "Selector", "selector": {"matchExpressions": [selector]}},
                        "kinds": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute"}],
                    },
                }
            )
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": shared.name, "namespace": shared.namespace, "labels": dict(MANAGED_BY)},
        "spec": {"gatewayClassName": gateway.config.class_name, "listeners": listeners},
    }


def gateway_namespace(gateway: GatewaySpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": gateway.config.gateway.namespace, "labels": dict(MANAGED_BY)},
    }
