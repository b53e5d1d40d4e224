"""Names and labels of the gateway's objects, shared by its builders and preflight (the router's name is
the spec's, `config.spec.gateway.router_name`, which the checks use too)."""

from __future__ import annotations

from config.platform_labels import MANAGED_BY, ROUTER_LABEL, TENANT_LABEL
from config.spec.gateway import router_name
from config.spec.model import ModelSpec


def objective_name(model: str, priority_class: str) -> str:
    """Objectives are namespaced and each names one pool, so the model is part of the name."""
    return f"{model}-{priority_class}"


def route_name(model: str, tenant: str) -> str:
    return f"{model}-{tenant}"


def listener_names(tenant: str, hostnames: tuple[str, ...]) -> list[str]:
    """A tenant's listeners on the shared Gateway, one per hostname: `t-<tenant>`, then
    `t-<tenant>-1`, ..."""
    return [f"t-{tenant}" + (f"-{i}" if i else "") for i in range(len(hostnames))]


def router_labels(model: ModelSpec) -> dict[str, str]:
    """The router's pods carry none of the model's selector labels, so neither the model's Service
    nor its pool nor its monitor selects them."""
    return {
        "app.kubernetes.io/name": "endpoint-picker",
        "app.kubernetes.io/instance": router_name(model.name),
        "app.kubernetes.io/component": "router",
        "app.kubernetes.io/part-of": model.name,
        ROUTER_LABEL: model.name,
        TENANT_LABEL: model.tenant,
        **MANAGED_BY,
    }


def router_selector(model: ModelSpec) -> dict[str, str]:
    """The router's pods: what its Deployment, Service and monitor select."""
    labels = router_labels(model)
    return {key: labels[key] for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance")}
